"""Statistics, defined once: classical tests and intervals (`classical`: AUROC, bootstrap, paired
permutation tests with Holm, power), prediction-powered estimates (`ppi`) and anytime-valid confidence
sequences and successive elimination (`sequential`)."""
