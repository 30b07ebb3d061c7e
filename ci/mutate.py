"""Mutation testing: change one thing in a module, run the tests that cover it, see them fail.

    python ci/mutate.py cudaload/_base/_untrusted.py tests/test_cache_trust.py [more test files]
        [--timeout S] [--lines A-B] [--only N,M] [--list] [--jobs N] [--json FILE]

Each mutant is one change to the module: a comparison negated or moved by one (``==``/``!=``,
``<``/``>=``, ``<``/``<=``, ``in``/``not in``, ``is``/``is not``), ``and``/``or`` swapped, a
``not`` dropped, ``True``/``False`` swapped, ``+``/``-`` swapped, an ``if``/``while``/``x if c
else y`` condition forced True and False, a statement replaced by ``pass``.  The mutant runs
``pytest -x -q`` over the given test files in a copy of the working tree (the tree itself is never
changed: other work goes on there), with a time limit; a failing, erroring or overrunning run kills
it, a passing one is a survivor.  Mutants known to be equivalent (no test can tell them from the
module: see ``EQUIVALENT``) are listed apart and left out of the score.

Written here rather than taken from mutmut: mutmut rewrites the modules in the tree it runs in
(other edits go on in this tree at the same time) and its trampolines do not reach the
subprocesses most of these tests start (each library scenario runs in a fresh interpreter); a
copy of the tree on PYTHONPATH reaches them all.

The module is written back with ``ast.unparse`` (comments gone, lines moved), so the unchanged
module is unparsed and run first: the tests must pass on it, or nothing is reported.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_RUNNING: set = set()  # the pytest processes running now, ended with the run when it is stopped

# (module, function or "*", description, text of the line): why no test can tell the mutant from
# the module.
_LOG_GUARD = ("a guard that only spares building a DEBUG record's arguments: _log.debug itself "
              "sends nothing when the logger is off")
_NO_WORD = ("a line whose first character cannot begin a name gives a word that is no directive "
            "name (each begins with a letter), which the scan passes over as it does None")
_NO_MARK = ("a text with neither '#' nor '%:' has no directive line: the scan of its lines finds "
            "none and gives ((), False) as the early return does")
_JOINED_PARTS = ("without '..', the parts of the path joined again are what normpath gives, but "
                 "for a leading '//', which normpath keeps and Linux reads as '/': the same file")
EQUIVALENT: dict[tuple[str, str, str, str], str] = {
    ("cudaload/compile/cache/disk.py", "*", "condition -> True", 'if _log.enabled("cache"):'):
        _LOG_GUARD,
    ("cudaload/launch/arguments.py", "__init__", "condition -> True",
     'fmt += (f"{p.offset - pos}x" if p.offset > pos else "") + p.code'):
        "at offset == pos the struct format gets '0x', zero pad bytes: the same layout",
    ("cudaload/launch/arguments.py", "__init__", "> -> >=",
     'fmt += (f"{p.offset - pos}x" if p.offset > pos else "") + p.code'):
        "the same '0x' (zero pad bytes) at offset == pos",
    ("cudaload/launch/arguments.py", "_bf16", "condition -> False",
     "return (bits >> 16) | (0x40 if value != value else 0)  # NaN stays NaN"):
        "struct's float32 pack on CPython 3.11 is a C cast, which quiets every NaN (signalling "
        "ones included): bit 22, 0x40 of the top half, is set already; the | 0x40 is for a pack "
        "that keeps a signalling NaN as it is, whose payload may lie in the low half alone",
    ("cudaload/launch/arguments.py", "convert", "< -> <=",
     'return value.to_bytes(size, "little", signed=value < 0)'):
        "0 has the same bytes signed or not",
    ("cudaload/compile/objectcode.py", "decode", "< -> <=",
     "if len(data) < _KEYLESS_SIZE or data[:8] != MAGIC:"):
        "an entry of exactly the bare header's size has empty metadata, which is no JSON: a miss "
        "either way",
    ("cudaload/compile/objectcode.py", "decode", ">= -> >",
     "if version == FORMAT and len(data) >= _HEADER_SIZE:"):
        "an entry of exactly the header's size has empty metadata, which is no JSON: a miss "
        "either way",
    ("cudaload/_base/_untrusted.py", "path_problem", "statement removed", "return None"):
        "path_problem's except clause: without it the function ends there and returns None too",
    # _directives.py: shortcuts that spare work, not change answers.
    ("cudaload/compile/includes/_directives.py", "_word", "statement removed",
     "if not line or line[0] not in _FIRST:"): _NO_WORD,
    ("cudaload/compile/includes/_directives.py", "_word", "condition -> False",
     "if not line or line[0] not in _FIRST:"): _NO_WORD,
    ("cudaload/compile/includes/_directives.py", "_word", "statement removed",
     "return None"): _NO_WORD,
    ("cudaload/compile/includes/_directives.py", "_scan", "condition -> True",
     'if "\\\\" in text:'):
        "str.replace of a line splice in a text without a backslash changes nothing",
    ("cudaload/compile/includes/_directives.py", "_scan", "statement removed",
     'if "#" not in text and "%:" not in text:'): _NO_MARK,
    ("cudaload/compile/includes/_directives.py", "_scan", "condition -> False",
     'if "#" not in text and "%:" not in text:'): _NO_MARK,
    ("cudaload/compile/includes/_directives.py", "_scan", "statement removed", "return (), False"):
        _NO_MARK,
    ("cudaload/compile/includes/_directives.py", "_scan", "statement removed", "continue"):
        "the continue after an include's entry: the next test, word not in (if, elif, define), "
        "continues for every include word too (the other continues of _scan are killed)",
    # claims.py: take() decides an unreadable claim (None) by its file's age itself, and asks
    # _stale only of a record; _stale's answer is only ever tested for truth.
    ("cudaload/compile/cache/claims.py", "_stale", "statement removed", "if record is None:"):
        "take never passes None (an unreadable claim is judged by its file's age there)",
    ("cudaload/compile/cache/claims.py", "_stale", "condition -> False", "if record is None:"):
        "take never passes None (an unreadable claim is judged by its file's age there)",
    ("cudaload/compile/cache/claims.py", "_stale", "statement removed", "return False"):
        "the early return for None (never passed), the except clause's (the function ends in "
        "return False next) or the last (None instead of False: take tests only its truth)",
    # includes.py
    ("cudaload/compile/includes/search.py", "resolve", "statement removed",
     "candidates: list[tuple[str | None, int]]"):
        "an annotation without a value: nothing runs for it in a function body",
    ("cudaload/compile/includes/search.py", "_join", "statement removed", 'if ".." not in path:'):
        _JOINED_PARTS,
    ("cudaload/compile/includes/search.py", "_join", "condition -> False", 'if ".." not in path:'):
        _JOINED_PARTS,
    ("cudaload/compile/includes/search.py", "_join", "statement removed",
     "return os.path.normpath(path)"): _JOINED_PARTS,
}

_NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt,
            ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In,
            ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_SYMBOL = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
           ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
           ast.Add: "+", ast.Sub: "-", ast.And: "and", ast.Or: "or"}
_KEPT_STATEMENTS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                    ast.ClassDef, ast.Pass, ast.Global, ast.Nonlocal)


def _docstring(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
        and isinstance(stmt.value.value, str)


def _idle(parent, body, i) -> bool:
    """Whether removing ``body[i]`` changes nothing by construction: ``__all__`` (names for
    ``import *`` and the reader), or a ``return None`` that ends a function."""
    stmt = body[i]
    if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                            for t in stmt.targets):
        return True
    return isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)) and i == len(body) - 1 \
        and isinstance(stmt, ast.Return) \
        and (stmt.value is None or isinstance(stmt.value, ast.Constant) and stmt.value.value is None)


def _sites(tree):
    """Every mutant of ``tree``, in a fixed order: (line, description, apply), where ``apply``
    changes the node in place.  The same tree parsed again gives the same list."""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                for table in (_NEGATED, _BOUNDARY):
                    new = table.get(type(op))
                    if new is not None:
                        def apply(node=node, i=i, new=new):
                            node.ops[i] = new()
                        yield line, f"{_SYMBOL[type(op)]} -> {_SYMBOL[new]}", apply
        elif isinstance(node, ast.BoolOp):
            other = ast.Or if isinstance(node.op, ast.And) else ast.And
            yield line, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[other]}", \
                lambda node=node, other=other: setattr(node, "op", other())
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in (ast.Add, ast.Sub):
            other = ast.Sub if isinstance(node.op, ast.Add) else ast.Add
            yield line, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[other]}", \
                lambda node=node, other=other: setattr(node, "op", other())
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield line, f"{node.value} -> {not node.value}", \
                lambda node=node: setattr(node, "value", not node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            for parent_field in _parents(tree, node):
                yield line, "not dropped", parent_field
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            for forced in (True, False):
                yield line, f"condition -> {forced}", \
                    lambda node=node, forced=forced: setattr(node, "test", ast.Constant(forced))
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                if isinstance(stmt, ast.stmt) and not isinstance(stmt, _KEPT_STATEMENTS) \
                        and not _docstring(stmt) and not _idle(node, body, i):
                    yield stmt.lineno, "statement removed", \
                        lambda body=body, i=i: body.__setitem__(i, ast.Pass())


def _parents(tree, target):
    """One function that puts ``target``'s operand in its place, found in its parent."""
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is target:
                yield lambda parent=parent, name=name: setattr(parent, name, target.operand)
                return
            if isinstance(value, list) and any(v is target for v in value):
                i = next(j for j, v in enumerate(value) if v is target)
                yield lambda value=value, i=i: value.__setitem__(i, target.operand)
                return


def _ordered(tree):
    """The mutants of ``tree`` by line (a stable sort: the same order for the same source)."""
    return sorted(_sites(tree), key=lambda site: site[0])


def mutants(source: str) -> list[tuple[int, str]]:
    """(line, description) of each mutant of ``source``; the index is the mutant's number."""
    return [(line, what) for line, what, _apply in _ordered(ast.parse(source))]


def mutated(source: str, number: int) -> str:
    """``source`` with mutant ``number`` applied, as Python text."""
    tree = ast.parse(source)
    for n, (_line, _what, apply) in enumerate(_ordered(tree)):
        if n == number:
            apply()
            return ast.unparse(ast.fix_missing_locations(tree))
    raise IndexError(number)


def _function_at(tree, line: int) -> str:
    """The name of the innermost function (or class) around ``line``, "" at module level."""
    around = [(node.lineno, node.name) for node in ast.walk(tree)
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
              and node.lineno <= line <= node.end_lineno]
    return max(around)[1] if around else ""


def _copy_tree(dest: str) -> None:
    """The working tree as git sees it (tracked and untracked, less ignored files) under ``dest``."""
    names = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = os.path.join(ROOT, name)
        if os.path.isfile(src) or os.path.islink(src):
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, name), follow_symlinks=False)


def _run_tests(tree: str, tests: list[str], timeout: float) -> tuple[str, float]:
    """'killed', 'survived' or 'timeout' for the tests run in ``tree``, and the seconds taken."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("CUDALOAD_CACHE_DIR", None)  # each run gets its own (tests/conftest.py)
    start = time.monotonic()
    # A session of its own: a timeout ends the tests' subprocesses with them.
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                             *tests], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    _RUNNING.add(proc)
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "timeout", time.monotonic() - start
    finally:
        _RUNNING.discard(proc)
    if rc == 5:
        raise SystemExit(f"no tests collected from {tests}")
    return ("survived" if rc == 0 else "killed"), time.monotonic() - start


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", help="the module to mutate, e.g. cudaload/_base/_untrusted.py")
    parser.add_argument("tests", nargs="*", help="the test files that cover it")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds one mutant's tests may take (default 300)")
    parser.add_argument("--lines", help="only mutants on lines A-B of the module")
    parser.add_argument("--only", help="only the mutants numbered N,M,... (see --list)")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)
    if not args.list and not args.tests:
        parser.error("name the test files that cover the module")
    return args


def _chosen(found, args) -> list[int]:
    numbers = range(len(found))
    if args.only:
        numbers = [int(n) for n in args.only.split(",")]
    if args.lines:
        low, _, high = args.lines.partition("-")
        numbers = [n for n in numbers if int(low) <= found[n][0] <= int(high or low)]
    return list(numbers)


def main(argv=None) -> int:
    args = _parse_args(argv)
    # A kill ends the run like Ctrl-C: the copies of the tree are removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    module = os.path.relpath(os.path.abspath(args.module), ROOT)
    with open(os.path.join(ROOT, module), encoding="utf-8") as f:
        source = f.read()
    lines = source.splitlines()
    found = mutants(source)
    chosen = _chosen(found, args)
    if args.list:
        for n in chosen:
            line, what = found[n]
            print(f"{n:4d} {module}:{line}: {what} | {lines[line - 1].strip()}")
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cudaload-mutate-") as scratch:
        os.chmod(scratch, 0o755)  # tests that run a scenario as another user read the copy
        trees = []
        for j in range(max(1, args.jobs)):
            trees.append(os.path.join(scratch, str(j)))
            _copy_tree(trees[-1])
            shutil.rmtree(os.path.join(trees[-1], os.path.dirname(module), "__pycache__"),
                          ignore_errors=True)
        for tree in trees:
            with open(os.path.join(tree, module), "w", encoding="utf-8") as f:
                f.write(ast.unparse(ast.parse(source)))
        outcome, seconds = _run_tests(trees[0], args.tests, args.timeout * 3)
        if outcome != "survived":
            print(f"the tests do not pass on the unchanged {module} ({outcome}): fix that first")
            return 2
        print(f"{module}: {len(chosen)} mutants; the tests take {seconds:.1f} s unchanged",
              flush=True)
        free = list(trees)

        def run(n: int) -> dict:
            tree = free.pop()
            try:
                with open(os.path.join(tree, module), "w", encoding="utf-8") as f:
                    f.write(mutated(source, n))
                outcome, seconds = _run_tests(tree, args.tests, args.timeout)
            finally:
                free.append(tree)
            line, what = found[n]
            text = lines[line - 1].strip()
            function = _function_at(ast.parse(source), line)
            why = EQUIVALENT.get((module, function, what, text)) \
                or EQUIVALENT.get((module, "*", what, text))
            result = {"number": n, "line": line, "function": function, "mutant": what,
                      "source": text,
                      "outcome": "equivalent" if outcome == "survived" and why else outcome,
                      "equivalent_because": why, "seconds": round(seconds, 1)}
            if result["outcome"] in ("survived", "equivalent"):
                print(f"  {result['outcome']}: #{n} {module}:{line} ({function}): {what} | {text}",
                      flush=True)
            return result

        pool = ThreadPoolExecutor(max(1, args.jobs))
        try:
            results = list(pool.map(run, chosen))
        except KeyboardInterrupt:  # Ctrl-C or a kill: no more mutants, and none left running
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in list(_RUNNING):
                os.killpg(proc.pid, signal.SIGKILL)
            pool.shutdown(wait=True)
            raise
        pool.shutdown()
    counts = {k: sum(r["outcome"] == k for r in results)
              for k in ("killed", "timeout", "survived", "equivalent")}
    judged = len(results) - counts["equivalent"]
    score = 100.0 * (counts["killed"] + counts["timeout"]) / judged if judged else 100.0
    elapsed = time.monotonic() - started
    print(f"{module}: {score:.1f}% of {judged} non-equivalent mutants killed "
          f"({counts['killed']} failed, {counts['timeout']} timed out, {counts['survived']} "
          f"survived; {counts['equivalent']} equivalent left out) in {elapsed:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"module": module, "tests": args.tests, "score": score, "counts": counts,
                       "seconds": round(elapsed), "mutants": results}, f, indent=1)
    return 0 if counts["survived"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
