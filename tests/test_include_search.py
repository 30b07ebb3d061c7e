"""The include search the cache key follows (cudaload/compile/includes.py, _directives.py) where
toolchain headers and user folders meet, on the CPU with no NVRTC: which files it keys, which
toolchain files it follows, and the files it refuses."""

from __future__ import annotations

import os

import pytest

from cudaload.compile import _directives, includes


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """tmp/user (a user -I folder), tmp/tc1 and tmp/tc2 (the toolchain's folders), current folder
    tmp; the process's memory of toolchain files starts empty."""
    monkeypatch.setattr(includes, "_toolchain_scans", {})
    monkeypatch.chdir(tmp_path)
    for name in ("user", "tc1", "tc2"):
        (tmp_path / name).mkdir()
    return tmp_path


def _keyed(tree, source: str, *, user: bool = True) -> list[str]:
    options = ["-I" + str(tree / "user")] if user else []
    found = includes.resolve(source, "k.cu", {}, options,
                             [str(tree / "tc1"), str(tree / "tc2")])
    return [os.path.relpath(path, tree) for path, _state in found.material]


def test_a_user_header_that_shadows_one_a_toolchain_header_includes_is_keyed(tree):
    """``<tc.h>`` of the toolchain includes ``<shadow.h>``: NVRTC looks in the -I folders first,
    so the user's ``shadow.h`` is what it reads, and changing it must change the key."""
    (tree / "tc1" / "tc.h").write_text("#include <shadow.h>\n")
    (tree / "tc1" / "shadow.h").write_text("// the toolchain's\n")
    (tree / "user" / "shadow.h").write_text("#define SHADOWED 1\n")
    assert _keyed(tree, "#include <tc.h>\n") == ["user/shadow.h", "user/tc.h"]
    # without a user folder the toolchain's identity covers all of it: nothing is keyed
    assert _keyed(tree, "#include <tc.h>\n", user=False) == []


def test_the_toolchain_is_followed_from_its_first_folder_that_has_the_file(tree):
    (tree / "tc1" / "tc.h").write_text("#include <more.h>\n")
    (tree / "tc2" / "tc.h").write_text("#include <never.h>\n")  # shadowed by tc1's
    (tree / "tc2" / "more.h").write_text('#include "user_only.h"\n')
    (tree / "user" / "user_only.h").write_text("\n")
    # tc2's more.h says "user_only.h": its own folder first (absent, toolchain: not keyed), then
    # the user folder, where it is
    assert _keyed(tree, "#include <tc.h>\n") == ["user/more.h", "user/tc.h", "user/user_only.h"]


def test_a_toolchain_path_that_is_no_regular_file_is_passed_over(tree):
    """A device where a toolchain header should be is not read (it could block or never end);
    the search goes on to the next folder, as NVRTC's does for a file it cannot open."""
    os.symlink("/dev/null", tree / "tc1" / "tc.h")
    (tree / "tc1" / "dir.h").mkdir()
    (tree / "tc2" / "tc.h").write_text("#include <shadow.h>\n#include <dir.h>\n")
    (tree / "tc2" / "dir.h").write_text("#include <deep.h>\n")
    (tree / "user" / "shadow.h").write_text("\n")
    (tree / "user" / "deep.h").write_text("\n")
    assert _keyed(tree, "#include <tc.h>\n") == ["user/deep.h", "user/dir.h", "user/shadow.h",
                                                 "user/tc.h"]


def test_a_toolchain_header_is_read_once_per_process(tree):
    (tree / "tc1" / "tc.h").write_text("#include <a.h>\n")
    (tree / "user" / "a.h").write_text("\n")
    assert _keyed(tree, "#include <tc.h>\n") == ["user/a.h", "user/tc.h"]
    (tree / "tc1" / "tc.h").write_text("#include <b.h>\n")  # the toolchain's files do not change
    assert _keyed(tree, "#include <tc.h>\n") == ["user/a.h", "user/tc.h"]


def test_a_probe_of_a_toolchain_header_does_not_follow_it(tree):
    (tree / "tc1" / "tc.h").write_text("#include <a.h>\n")
    assert _keyed(tree, "#if __has_include(<tc.h>)\n#endif\n") == ["user/tc.h"]


def test_a_header_beyond_the_size_bound_is_refused_and_one_at_it_is_read(tree, monkeypatch):
    monkeypatch.setattr(includes, "MAX_HEADER_BYTES", 10)
    (tree / "user" / "fits.h").write_bytes(b"// 10 byte")
    assert _keyed(tree, "#include <fits.h>\n") == ["user/fits.h"]
    (tree / "user" / "big.h").write_bytes(b"// 11 bytes")
    with pytest.raises(ValueError, match=r"big.h, 11 bytes: too large for a header \(limit 10\)"
                                         ". Next step: include the right file"):
        _keyed(tree, "#include <big.h>\n")


def test_a_header_of_the_real_bound_is_refused_by_its_size_alone(tree):
    with open(tree / "user" / "huge.h", "wb") as f:
        f.truncate(includes.MAX_HEADER_BYTES + 1)  # sparse: nothing is written, nor read
    with pytest.raises(ValueError, match="too large for a header"):
        _keyed(tree, "#include <huge.h>\n")


@pytest.mark.parametrize("text, expected", [
    ('/* licence */ #include "a.h"\n', [("include", True, "a.h")]),
    ('/* one */ /* two */\t%:include <b.h>\n', [("include", False, "b.h")]),
    ('#import "c.h"\n', [("include", True, "c.h")]),
    ("#include_next <d.h>\n", [("include_next", False, "d.h")]),
    ('int x; /* not a directive */ int y;\n#include "e.h"\n', [("include", True, "e.h")]),
])
def test_directives_after_a_comment_and_of_each_spelling_are_taken(text, expected):
    assert _directives.scan(text) == (tuple(expected), False)
