"""The include scanner written with regular expressions only: the reference that
cudaload/compile/includes/_directives.py, which reads the common lines with str methods, must agree
with."""

from __future__ import annotations

import re

_DIRECTIVE = re.compile(r"\n[ \t\f\v\r]*(?:#|%:)([^\n]*)")
_AFTER_COMMENT = re.compile(r"\*/[ \t\f\v\r]*(?:#|%:)([^\n]*)")
_WORD = re.compile(r"[ \t\f\v\r]*([A-Za-z_]\w*)[ \t\f\v\r]*(.*)", re.S)
_COMMENT_OR_STRING = re.compile(r'//.*|/\*(?:.*?\*/|.*)|"(?:[^"\\]|\\.)*"?', re.S)
_OPERAND = re.compile(r'"([^"\n]*)"|<([^>\n]*)>')
_HAS_INCLUDE = re.compile(
    r'__has_include(_next)?[ \t\f\v\r]*\([ \t\f\v\r]*(?:"([^"\n]*)"|<([^>\n]*)>|([^)\n]*))')
_CONDITION_NAME = re.compile(r'\([ \t\f\v\r]*(?:"([^"\n]+)"|<([^>\n]+)>)[ \t\f\v\r]*\)')


_TRIGRAPH = re.compile(r"\?\?([=/'()!<>-])")
_TRIGRAPHS = dict(zip("=/'()!<>-", "#\\^[]|{}~"))


def scan(text: str):
    """Trigraphs both ways, as the scan does (it does not know the language standard)."""
    found, computed = _scan(text)
    replaced = _TRIGRAPH.sub(lambda m: _TRIGRAPHS[m.group(1)], text)
    if replaced == text:
        return found, computed
    more, more_computed = _scan(replaced)
    return tuple(dict.fromkeys(found + more)), computed or more_computed


def _scan(text: str):
    if "\\" in text:
        text = text.replace("\\\r\n", "").replace("\\\n", "")
    if "#" not in text and "%:" not in text:
        return (), False
    found, computed = [], False
    text = "\n" + text
    lines = [m.group(1) for m in _DIRECTIVE.finditer(text)]
    if "*/" in text:
        lines += [m.group(1) for m in _AFTER_COMMENT.finditer(text)]
    for line in lines:
        if "/" in line:
            line = _COMMENT_OR_STRING.sub(lambda m: " " if m.group(0)[0] == "/" else m.group(0),
                                          line)
        directive = _WORD.match(line)
        if directive is None:
            continue
        word, rest = directive.group(1), directive.group(2)
        if word in ("include", "include_next", "import"):
            operand = _OPERAND.match(rest)
            if operand is None:
                computed = True
                continue
            quoted = operand.group(1) is not None
            found.append(("include_next" if word == "include_next" else "include", quoted,
                          operand.group(1) if quoted else operand.group(2)))
            continue
        if word in ("if", "elif", "define"):
            for probe in _HAS_INCLUDE.finditer(rest):
                if probe.group(4) is not None:
                    computed = computed or (word != "define" and bool(probe.group(4).strip()))
                    continue
                quoted = probe.group(2) is not None
                found.append(("probe", quoted, probe.group(2) if quoted else probe.group(3)))
            if word != "define":
                for probe in _CONDITION_NAME.finditer(rest):
                    quoted = probe.group(1) is not None
                    found.append(("probe", quoted, probe.group(1) if quoted else probe.group(2)))
    return tuple(found), computed
