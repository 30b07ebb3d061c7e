"""docs/api.md against the code: each public name has its section, and what the page says exists.

A section is a ``### `NAME``` heading with the ``####`` headings under it.  Each one for a name of
``cudaload.__all__`` needs a signature line naming ``cudaload.NAME`` in a code block, a line
starting ``**Raises**`` (``**Raised by**`` for an exception class) and a code block after an
``**Example**`` line.  The signature lines of a section (its code blocks other than examples) are
compared with the code: ``cudaload.NAME(...)`` with ``inspect.signature`` of the function or
class, ``NAME.member(...)`` with the method's, ``NAME.attribute`` with the class; parameter names,
kinds and defaults must agree, and annotations and return annotations where both give one.  A
section or signature line for a name that is not public fails too.  A heading whose own text has
a line starting ``> **TODO-REF**`` is a stub for what is not in the code yet: it is exempt, and
listed by a skip.

Only inspects: nothing here calls into a CUDA library or compiles anything.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import os
import re
import sys

import pytest

import cudaload
from tests._doc_blocks import Block, Part, parts
from tests._support import ROOT

DOC = os.path.join(ROOT, "docs", "api.md")

_SECTION_TITLE = re.compile(r"`(?:cudaload\.)?([A-Za-z_]\w*)`(?:\s|$)")
_RAISES = re.compile(r"\*\*Raise(?:s|d by)\*\*")
_HEAD = re.compile(r"(?P<prefix>cudaload\.)?(?P<owner>[A-Za-z_]\w*)(?:\.(?P<member>[A-Za-z_]\w*))?")
_MISSING = object()


# ---- reading the page ----------------------------------------------------------------------------

class Section:
    """The parts of one ``### `NAME``` heading: its own and the deeper headings under it."""

    def __init__(self, name: str, head: Part):
        self.name, self.head, self.parts = name, head, [head]

    @property
    def live(self) -> list[Part]:
        """The parts that describe code that exists (not stubs)."""
        return [p for p in self.parts if not p.stub]


def sections(text: str) -> list[Section]:
    found: list[Section] = []
    current = None
    for part in parts(text):
        title = _SECTION_TITLE.match(part.title)
        if part.level == 3 and title:
            current = Section(title.group(1), part)
            found.append(current)
        elif part.level <= 3:
            current = None
        elif current is not None:
            current.parts.append(part)
    return found


# ---- signature lines -----------------------------------------------------------------------------

def _without_comment(line: str) -> str:
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:i]
    return line


def _closing(text: str, start: int) -> int:
    """The index of the bracket closing the one at ``start``, or -1."""
    depth, quote = 0, None
    for i in range(start, len(text)):
        char = text[i]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def statements(block: Block) -> list[tuple[int, str]]:
    """The block's lines without comments, a signature spread over several lines joined."""
    out: list[tuple[int, str]] = []
    pending, first = "", 0
    for number, line in block.lines:
        code = _without_comment(line).strip()
        if not code and not pending:
            continue
        if not pending:
            first = number
        pending = f"{pending} {code}".strip()
        opened = pending.count("(") + pending.count("[") - pending.count(")") - pending.count("]")
        if opened <= 0:
            out.append((first, pending))
            pending = ""
    if pending:
        out.append((first, pending))
    return out


class Documented:
    """One signature line: ``cudaload.NAME(...)``, ``NAME.member(...) -> R`` or ``NAME.attr: T``."""

    def __init__(self, line: int, owner: str, member: str | None, params: str | None,
                 returns: str | None, prefixed: bool):
        self.line, self.owner, self.member = line, owner, member
        self.params, self.returns, self.prefixed = params, returns, prefixed

    @property
    def path(self) -> str:
        return f"{self.owner}.{self.member}" if self.member else self.owner


def signature_line(line: int, text: str) -> Documented | None:
    """The signature ``text`` documents, or None for a line of another form (``str(status)``,
    ``kernel(grid, block, args)``, an import): lines that name an instance, not the API."""
    head = _HEAD.match(text)
    if head is None:
        return None
    prefixed = bool(head.group("prefix"))
    owner = head.group("owner")
    if not prefixed and not owner[0].isupper():
        return None
    rest = text[head.end():].strip()
    params = returns = None
    if rest.startswith("("):
        end = _closing(rest, 0)
        if end < 0:
            return None
        params, after = rest[1:end], rest[end + 1:].strip()
        if after.startswith("->"):
            returns = after[2:].strip()
        elif after:
            return None
    elif rest and not rest.startswith(":"):
        return None
    return Documented(line, owner, head.group("member"), params, returns, prefixed)


def _annotation(value) -> str | None:
    """An annotation as source text, normalised; None for none."""
    if value is inspect.Parameter.empty or value is inspect.Signature.empty or value is None:
        return None
    if not isinstance(value, str):
        return getattr(value, "__qualname__", repr(value))
    try:
        return ast.unparse(ast.parse(value, mode="eval").body)
    except SyntaxError:
        return value


def _doc_parameters(params: str) -> list[tuple[str, str, object, str | None]]:
    """(name, kind, default or _MISSING, annotation) of a documented parameter list.  Raises
    SyntaxError."""
    args = ast.parse(f"def _({params}): pass").body[0].args
    positional = [*args.posonlyargs, *args.args]
    defaults = [_MISSING] * (len(positional) - len(args.defaults)) + list(args.defaults)
    out = []
    for i, arg in enumerate(positional):
        kind = "POSITIONAL_ONLY" if i < len(args.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append((arg.arg, kind, defaults[i], arg.annotation))
    if args.vararg:
        out.append((args.vararg.arg, "VAR_POSITIONAL", _MISSING, args.vararg.annotation))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        out.append((arg.arg, "KEYWORD_ONLY", _MISSING if default is None else default,
                    arg.annotation))
    if args.kwarg:
        out.append((args.kwarg.arg, "VAR_KEYWORD", _MISSING, args.kwarg.annotation))
    return [(name, kind, default, ast.unparse(ann) if ann is not None else None)
            for name, kind, default, ann in out]


def _same_default(documented, actual) -> bool:
    if documented is _MISSING or actual is inspect.Parameter.empty:
        return documented is _MISSING and actual is inspect.Parameter.empty
    try:
        value = ast.literal_eval(documented)
    except ValueError:
        return ast.unparse(documented) == repr(actual)
    return type(value) is type(actual) and value == actual


def _render(params) -> str:
    return ", ".join(f"{name} ({kind.lower()})" for name, kind, *_ in params)


def compare(doc: Documented, sig: inspect.Signature) -> list[str]:
    """How the documented parameters differ from ``sig``: names, kinds, defaults, annotations."""
    where = f"docs/api.md:{doc.line}: {doc.path}"
    try:
        documented = _doc_parameters(doc.params)
    except SyntaxError as exc:
        return [f"{where}: the parameters do not parse as Python ({exc.msg})"]
    actual = [(p.name, p.kind.name, p.default, _annotation(p.annotation))
              for p in sig.parameters.values()]
    if [d[:2] for d in documented] != [a[:2] for a in actual]:
        return [f"{where}: documented parameters {_render(documented)}; the code has "
                f"{_render(actual)} ({sig})"]
    problems = []
    for (name, _kind, default, ann), (_n, _k, real, real_ann) in zip(documented, actual):
        if not _same_default(default, real):
            shown = "none" if default is _MISSING else ast.unparse(default)
            problems.append(f"{where}: parameter {name} is documented with default {shown}, "
                            f"the code's is {'none' if real is inspect.Parameter.empty else repr(real)}")
        if ann is not None and real_ann is not None and _annotation(ann) != real_ann:
            problems.append(f"{where}: parameter {name} is documented as {ann}, the code "
                            f"annotates {real_ann}")
    real_return = _annotation(sig.return_annotation)
    if doc.returns and real_return and _annotation(doc.returns) != real_return:
        problems.append(f"{where}: documented to return {doc.returns}, the code annotates "
                        f"{real_return}")
    return problems


def _has_attribute(cls, member: str) -> bool:
    """Whether instances of ``cls`` have ``member``: on the class, set by ``self.member = ...``
    in its module, or (for an exception) on an instance made without arguments."""
    if inspect.getattr_static(cls, member, _MISSING) is not _MISSING:
        return True
    if isinstance(cls, type) and issubclass(cls, BaseException):
        return hasattr(cls(), member)
    tree = ast.parse(inspect.getsource(sys.modules[cls.__module__]))
    for node in ast.walk(tree):  # self.member = ..., also as one target of a tuple assignment
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Attribute) and leaf.attr == member and \
                        isinstance(leaf.value, ast.Name) and leaf.value.id == "self":
                    return True
    return False


def check_signature(doc: Documented, public: set) -> list[str]:
    where = f"docs/api.md:{doc.line}: {doc.path}"
    if doc.owner not in public:
        return [f"{where}: documents {doc.owner}, which is not in cudaload.__all__"]
    target = getattr(cudaload, doc.owner)
    if doc.member is None:
        if doc.params is None:
            return []
        if not callable(target):
            return [f"{where}: documented as callable, but cudaload.{doc.owner} is not"]
        return compare(doc, inspect.signature(target))
    static = inspect.getattr_static(target, doc.member, _MISSING)
    if doc.params is None:
        if not _has_attribute(target, doc.member):
            return [f"{where}: {doc.owner} has no attribute {doc.member}"]
        return []
    if static is _MISSING or not callable(getattr(target, doc.member)):
        return [f"{where}: {doc.owner} has no method {doc.member}"]
    sig = inspect.signature(getattr(target, doc.member))
    if inspect.isfunction(static):  # a plain method: the documented form leaves self out
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    return compare(doc, sig)


# ---- the checks ----------------------------------------------------------------------------------

def _signature_blocks(parts_):
    for part in parts_:
        for block in part.blocks:
            if block.lang == "python" and not block.example:
                yield block


def _exception_names(text: str) -> list[str]:
    return re.findall(r"`(\w+(?:Error|Exception|Warning))`", text)


def check_reference(text: str, public) -> list[str]:
    """Every way docs/api.md ``text`` disagrees with the public names ``public`` and the code."""
    public = set(public)
    problems = []
    found: dict[str, Section] = {}
    for section in sections(text):
        where = f"docs/api.md:{section.head.line}: section {section.name}"
        if section.head.stub:
            continue
        if section.name not in public:
            problems.append(f"{where}: {section.name} is not in cudaload.__all__; remove the "
                            "section, or mark it TODO-REF if the name is still to come")
            continue
        if section.name in found:
            problems.append(f"{where}: a second section for {section.name} (the first is at "
                            f"line {found[section.name].head.line})")
            continue
        found[section.name] = section
        live = section.live
        lines = [statement for block in _signature_blocks(live) for statement in statements(block)]
        named = re.compile(rf"(?<![\w.])cudaload\.{re.escape(section.name)}(?!\w)")
        if not any(named.search(text_) for _n, text_ in lines):
            problems.append(f"{where}: no signature line naming cudaload.{section.name} in a "
                            "code block")
        target = getattr(cudaload, section.name)
        if callable(target) and not any(
                (d := signature_line(n, t)) is not None and d.prefixed and d.member is None
                and d.owner == section.name and d.params is not None for n, t in lines):
            problems.append(f"{where}: no signature line cudaload.{section.name}(...)")
        body = [text_ for part in live for _n, text_ in part.body]
        if not any(_RAISES.match(line) for line in body):
            problems.append(f"{where}: no line starting **Raises** (or **Raised by**)")
        examples = [b for part in live for b in part.blocks if b.example]
        if not examples:
            problems.append(f"{where}: no code block after an **Example** line")
        for block in examples:
            if block.lang == "python":
                try:
                    ast.parse("\n".join(line for _n, line in block.lines))
                except SyntaxError as exc:
                    problems.append(f"docs/api.md:{block.line}: the example of {section.name} "
                                    f"is no valid Python ({exc.msg}, its line {exc.lineno})")
        for number, statement in lines:
            doc = signature_line(number, statement)
            if doc is not None:
                problems += check_signature(doc, public)
        for line in body:
            if _RAISES.match(line) or line.startswith("**Raises"):
                for name in _exception_names(line):
                    if not (hasattr(cudaload.errors, name) or hasattr(builtins, name)
                            or name in _WARNINGS):
                        problems.append(f"{where}: raises {name}, which is neither a cudaload "
                                        "error nor a built-in exception")
    for name in sorted(public - set(found) - set(stubs(text))):
        problems.append(f"docs/api.md: cudaload.{name} has no section (a heading ### `{name}`)")
    return problems


# Warnings cudaload emits that live outside cudaload.errors.
_WARNINGS = {"CacheWarning": "cudaload.compile.cache", "BundleWarning": "cudaload.compile.bundle",
             "ArchWarning": "cudaload.compile.plan"}


def stubs(text: str) -> list[str]:
    """The titles of the TODO-REF headings: what the page promises and the code lacks yet."""
    return [_SECTION_TITLE.match(p.title).group(1) if p.level == 3 and
            _SECTION_TITLE.match(p.title) else p.title for p in parts(text) if p.stub]


# ---- tests ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def text() -> str:
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def test_the_reference_matches_the_code(text):
    assert check_reference(text, cudaload.__all__) == []


def test_the_warnings_named_are_where_the_page_says():
    import importlib

    for name, module in _WARNINGS.items():
        assert issubclass(getattr(importlib.import_module(module), name), UserWarning)


def test_pending_sections(text):
    pending = stubs(text)
    if pending:
        pytest.skip(f"{len(pending)} TODO-REF sections of docs/api.md wait for their code: "
                    + "; ".join(pending))


def _section_of(text: str, name: str) -> tuple[int, int]:
    """(start, end) offsets of the section ``### `name```."""
    start = text.index(f"\n### `{name}`\n") + 1
    end = text.find("\n### ", start + 1)
    end2 = text.find("\n## ", start + 1)
    return start, min(e for e in (end, end2, len(text)) if e >= 0)


def test_a_public_name_without_its_section_fails(text):
    start, end = _section_of(text, "alloc")
    problems = check_reference(text[:start] + text[end:], cudaload.__all__)
    assert problems == ["docs/api.md: cudaload.alloc has no section (a heading ### `alloc`)"]


@pytest.mark.parametrize("drop, complaint", [
    ("**Example**", "no code block after an **Example** line"),
    ("**Raises**", "no line starting **Raises**"),
])
def test_a_section_without_raises_or_example_fails(text, drop, complaint):
    start, end = _section_of(text, "alloc")
    section = text[start:end].replace(drop, "Plainly")
    problems = check_reference(text[:start] + section + text[end:], cudaload.__all__)
    assert len(problems) == 1 and complaint in problems[0] and "alloc" in problems[0]


def test_a_section_without_its_signature_line_fails(text):
    start, end = _section_of(text, "alloc")
    section = text[start:end].replace("cudaload.alloc(nbytes", "alloc(nbytes")
    problems = check_reference(text[:start] + section + text[end:], cudaload.__all__)
    assert any("no signature line naming cudaload.alloc" in p for p in problems)


@pytest.mark.parametrize("old, new, complaint", [
    ('output: str = "auto") -> ObjectCode', 'output: str = "cubin") -> ObjectCode',
     "parameter output is documented with default 'cubin', the code's is 'auto'"),
    ("cudaload.alloc(nbytes: int, device=None, stream=None, pool",
     "cudaload.alloc(size: int, device=None, stream=None, pool",
     "documented parameters size"),
    ("cudaload.Stream(device=None, *, priority", "cudaload.Stream(device=None, priority",
     "documented parameters device (positional_or_keyword), priority (positional_or_keyword)"),
    ("Event.query() -> bool", "Event.query() -> int", "documented to return int"),
    ("Event.query() -> bool", "Event.query_now() -> bool", "Event has no method query_now"),
    ("Stream.ptr: int", "Stream.pointer: int", "Stream has no attribute pointer"),
    ("DriverError.code: int", "DriverError.errno_code: int", "DriverError has no attribute"),
    ("cudaload.alloc(nbytes: int, device=None, stream=None, pool",
     "cudaload.alloc(nbytes: str, device=None, stream=None, pool",
     "parameter nbytes is documented as str, the code annotates int"),
    ("buf = cudaload.alloc(1 << 20)\nbuf.memset(0)\n", "buf = cudaload.alloc(1 << 20\n",
     "the example of alloc is no valid Python"),
    ("**Raises** `TypeError` for a size that is no integer", "**Raises** `SizeError` for a size",
     "raises SizeError, which is neither a cudaload error nor a built-in exception"),
])
def test_a_page_that_differs_from_the_code_fails(text, old, new, complaint):
    assert text.count(old) == 1, old
    problems = check_reference(text.replace(old, new), cudaload.__all__)
    assert len(problems) == 1 and complaint in problems[0], problems


def test_a_section_for_a_name_that_is_not_public_fails(text):
    extra = ("\n### `Shiny`\n\n```python\ncudaload.Shiny()\n```\n\n**Raises** nothing.\n\n"
             "**Example**\n\n```python\ncudaload.Shiny()\n```\n")
    at = text.index("\n## Load and launch")
    problems = check_reference(text[:at] + extra + text[at:], cudaload.__all__)
    assert len(problems) == 1 and "Shiny is not in cudaload.__all__" in problems[0]
    # ... a name that stopped being public, while its section stayed:
    problems = check_reference(text, [n for n in cudaload.__all__ if n != "Bundle"])
    assert len(problems) == 1 and "section Bundle: Bundle is not in cudaload.__all__" in problems[0]
    # ... and a signature line of a name that is not public:
    old = "Program.from_file(path, **kw) -> Program"
    assert text.count(old) == 1
    problems = check_reference(text.replace(old, "Programme." + old[8:]), cudaload.__all__)
    assert len(problems) == 1 and "documents Programme, which is not in" in problems[0]


def test_a_stub_is_exempt_until_filled(text):
    # A stub of a name that is not public yet passes, and becomes a real section once unmarked.
    stub = ("\n### `Shiny`\n\n> **TODO-REF**: being added.\n\n```python\ncudaload.Shiny(x)\n```\n")
    at = text.index("\n## Load and launch")
    assert check_reference(text[:at] + stub + text[at:], cudaload.__all__) == []
    assert "Shiny" in stubs(text[:at] + stub + text[at:])
    unmarked = stub.replace("> **TODO-REF**: being added.", "Shiny things.")
    assert check_reference(text[:at] + unmarked + text[at:], cudaload.__all__) != []


def test_the_page_stands_alone(text):
    # No link or mention of a contract document the repository does not hold.
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert target.startswith("http") or os.path.exists(
            os.path.join(ROOT, "docs", target)), target
    assert "API.md" not in text


def test_the_version_is_public_and_the_installed_release():
    import importlib.metadata

    assert "__version__" in dir(cudaload) and "__version__" in cudaload.__all__
    try:
        installed = importlib.metadata.version("cudaload")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree: its pyproject's
        import tomllib

        with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
            installed = tomllib.load(f)["project"]["version"]
    assert cudaload.__version__ == installed


def test_the_readme_error_tree_names_every_error_class():
    from cudaload import errors

    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    tree = readme[readme.index("CudaLoadError(Exception)"):]
    tree = tree[:tree.index("```")]
    classes = [name for name, value in vars(errors).items() if isinstance(value, type)
               and issubclass(value, errors.CudaLoadError) and value.__module__ == errors.__name__]
    missing = [name for name in classes if re.search(rf"(── |^){name}\b", tree, re.M) is None]
    assert len(classes) > 10 and missing == [], missing


def test_the_cache_folders_python_methods_are_in_the_reference(text):
    """``cudaload cache info|clear|prune`` have a Python counterpart each, and the page names it
    with what it returns."""
    from cudaload.compile.cache import disk

    section = text[text.index("### `cudaload cache`"):text.index("### `cudaload precompile`")]
    for method in ("info", "clear", "prune"):
        assert callable(getattr(disk.DiskCache, method))
        assert f"cudaload.compile.cache.configured().{method}(" in section, method


def test_every_pickled_field_of_objectcode_is_listed(text):
    import pickle

    from cudaload import ObjectCode

    _rebuild, (fields,) = ObjectCode(b"//ptx", "ptx").__reduce__()
    line = next(line for line in text.splitlines() if line.startswith("pickle.dumps(obj)"))
    assert pickle.loads(pickle.dumps(ObjectCode(b"//ptx", "ptx"))).kind == "ptx"
    missing = [name for name in fields if name not in line]
    assert missing == [], missing
