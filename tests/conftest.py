import pytest


@pytest.fixture(scope="session")
def raw_ready():
    """The raw data, prepared once per session (copied from ../shared/data)."""
    from helpers.data import prepare_data

    return prepare_data()
