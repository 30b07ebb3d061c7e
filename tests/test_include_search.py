"""The include search the cache key follows (cudaload/compile/includes/search.py, _directives.py)
where toolchain headers and user folders meet, on the CPU with no NVRTC: which files it keys, which
toolchain files it follows, and the files it refuses."""

from __future__ import annotations

import os

import pytest

from cudaload.compile.includes import _directives, search as includes


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
    return [os.path.relpath(path, tree) for path, _state in found.path_states]


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


# What resolve() returns, judged path by path: the path_states (path and state), includes_known,
# sure and the stamps, for trees built in tmp.

def _resolve(tree, source: str, options=(), headers=None, tc=("tc1", "tc2")):
    return includes.resolve(source, "k.cu", headers or {}, list(options),
                            [str(tree / d) for d in tc])


def _states(found) -> list[tuple[str, str]]:
    """(path, state) of each path looked at, the current folder's own left off: as the module
    names them, ".." kept."""
    here = os.getcwd() + os.sep
    return [(path[len(here):] if path.startswith(here) else path, state)
            for path, state in found.path_states]


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _file_signature(path):
    import stat

    st = os.stat(path)
    return (stat.S_IFREG, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@pytest.mark.parametrize("source, known", [("#include <a.h>\n", True),
                                             ("#include <a.h>\n#include MACRO\n", False)])
def test_angle_includes_alone_key_nothing_and_are_sure(tree, source, known):
    found = _resolve(tree, source)
    assert (found.path_states, found.stamps, found.includes_known, found.sure) == ((), (), known,
                                                                                known)


def test_a_quoted_include_is_looked_up_beside_the_program_and_only_there_without_folders(tree):
    (tree / "tc1" / "a.h").write_text("\n")  # the toolchain's folders are searched after: not keyed
    found = _resolve(tree, '#include "a.h"\n')
    assert _states(found) == [("a.h", "absent")]
    assert found.includes_known is True and found.sure is False
    assert found.stamps == (str(tree), ((str(tree / "a.h"), ("error", 2)),))
    (tree / "a.h").write_text("int a;\n")
    found = _resolve(tree, '#include "a.h"\n')
    assert _states(found) == [("a.h", _digest(b"int a;\n"))]
    assert found.stamps == (str(tree), ((str(tree / "a.h"), _file_signature(tree / "a.h")),))


def test_a_toolchain_header_reached_without_user_folders_is_not_followed(tree):
    """With no -I folder nothing can shadow what a toolchain header includes: not even a name that
    leaves the toolchain's folder is followed (its identity covers its own headers)."""
    (tree / "tc1" / "tc.h").write_text('#include "../outside.h"\n')
    (tree / "outside.h").write_text("\n")
    assert _states(_resolve(tree, '#include "tc.h"\n')) == [("tc.h", "absent")]


def test_an_absolute_include_is_keyed_as_named_and_found_first(tree):
    (tree / "user" / "abs.h").write_text("\n")
    name = str(tree / "user" / "abs.h")
    for source in (f"#include <{name}>\n", f'#include "{name}"\n'):
        found = _resolve(tree, source)
        assert _states(found) == [("user/abs.h", _digest(b"\n"))]
        assert found.sure is False
    # The first include of the text names an absolute path: nothing else comes before it.
    assert _states(_resolve(tree, f'#include "{name}"\n#include "b.h"\n')) == [
        ("b.h", "absent"), ("user/abs.h", _digest(b"\n"))]


def test_the_user_folders_are_searched_in_order_before_the_toolchain(tree):
    (tree / "u2").mkdir()
    (tree / "u2" / "a.h").write_text("A")
    (tree / "tc1" / "a.h").write_text("T")
    found = _resolve(tree, "#include <a.h>\n", ["-Iuser", "-I" + str(tree / "u2")])
    # angle brackets: not looked up beside the program; relative -I folders from the current one
    assert _states(found) == [("u2/a.h", _digest(b"A")), ("user/a.h", "absent")]
    assert found.includes_known is True and found.sure is False


def test_a_quoted_include_found_beside_the_program_stops_the_search(tree):
    (tree / "a.h").write_text("here")
    (tree / "user" / "a.h").write_text("user")
    assert _states(_resolve(tree, '#include "a.h"\n', ["-Iuser"])) == [("a.h", _digest(b"here"))]


def test_no_source_include_skips_the_folder_of_every_file_that_includes(tree):
    """NVRTC 13.5 with --no-source-include: neither the program's folder nor a header's is
    searched (found by the NVRTC-oracle test: a pre-included h.h including "h.h")."""
    (tree / "a.h").write_text("here")
    (tree / "user" / "b.h").write_text('#include "c.h"\n')
    (tree / "user" / "c.h").write_text("c")
    source = '#include "a.h"\n#include "b.h"\n'
    assert _states(_resolve(tree, source, ["--no-source-include"])) == []
    assert _states(_resolve(tree, source, ["--no-source-include", "-Iuser"])) == [
        ("user/a.h", "absent"), ("user/b.h", _digest(b'#include "c.h"\n')),
        ("user/c.h", _digest(b"c"))]
    assert _states(_resolve(tree, source)) == [("a.h", _digest(b"here")), ("b.h", "absent")]
    # b.h found through -I., then "c.h": looked for in -I. and -Iuser, never beside b.h first.
    (tree / "sub").mkdir()
    (tree / "sub" / "b.h").write_text('#include "c.h"\n')
    (tree / "sub" / "c.h").write_text("beside")
    found = _states(_resolve(tree, '#include "sub/b.h"\n', ["--no-source-include", "-I.",
                                                              "-Iuser"]))
    assert ("sub/c.h", _digest(b"beside")) not in found
    assert ("c.h", "absent") in found and ("user/c.h", _digest(b"c")) in found
    # A pre-included file is still looked for in the current folder, its includes are not.
    (tree / "pre.h").write_text('#include "c.h"\n')
    (tree / "c.h").write_text("cwd")
    found = _states(_resolve(tree, "\n", ["--no-source-include", "--pre-include=pre.h",
                                          "-Iuser"]))
    assert ("pre.h", _digest(b'#include "c.h"\n')) in found
    assert ("user/c.h", _digest(b"c")) in found and ("c.h", _digest(b"cwd")) not in found


def test_a_quoted_include_of_a_header_looks_in_the_headers_folder_first(tree):
    (tree / "user" / "sub").mkdir()
    (tree / "user" / "sub" / "b.h").write_text('#include "c.h"\n')
    (tree / "user" / "sub" / "c.h").write_text("near")
    (tree / "user" / "c.h").write_text("far")
    assert _states(_resolve(tree, "#include <sub/b.h>\n", ["-Iuser"])) == [
        ("user/sub/b.h", _digest(b'#include "c.h"\n')), ("user/sub/c.h", _digest(b"near"))]


def test_an_angle_include_of_a_header_starts_at_the_first_folder_again(tree):
    (tree / "u2").mkdir()
    (tree / "user" / "b.h").write_text("#include <c.h>\n")
    (tree / "user" / "c.h").write_text("first")
    (tree / "u2" / "c.h").write_text("second")
    assert _states(_resolve(tree, "#include <b.h>\n", ["-Iuser", "-Iu2"])) == [
        ("user/b.h", _digest(b"#include <c.h>\n")), ("user/c.h", _digest(b"first"))]


@pytest.mark.parametrize("spelling", ["<a.h>", '"a.h"'])
def test_include_next_goes_on_after_the_folder_of_the_including_header(tree, spelling):
    (tree / "u2").mkdir()
    (tree / "user" / "a.h").write_text(f"#include_next {spelling}\n")
    (tree / "u2" / "a.h").write_text("next")
    assert _states(_resolve(tree, "#include <a.h>\n", ["-Iuser", "-Iu2"])) == [
        ("u2/a.h", _digest(b"next")), ("user/a.h", _digest(f"#include_next {spelling}\n".encode()))]
    # A second -I folder: include_next from the first of them reaches the second, the third
    # being where it would go from the second.
    (tree / "u3").mkdir()
    (tree / "u3" / "a.h").write_text("third")
    assert [p for p, _ in _states(_resolve(tree, "#include <a.h>\n",
                                           ["-Iuser", "-Iu2", "-Iu3"]))] == ["u2/a.h", "user/a.h"]


def test_include_next_from_the_program_is_a_plain_search(tree):
    (tree / "a.h").write_text("here")
    assert _states(_resolve(tree, '#include_next "a.h"\n', ["-Iuser"])) == [
        ("a.h", _digest(b"here"))]
    assert _states(_resolve(tree, "#include_next <a.h>\n", ["-Iuser"])) == [
        ("user/a.h", "absent")]


def test_include_next_from_a_header_found_beside_its_includer_is_a_plain_search(tree):
    (tree / "a.h").write_text('#include_next "b.h"\n')
    assert _states(_resolve(tree, '#include "a.h"\n', ["-Iuser"])) == [
        ("a.h", _digest(b'#include_next "b.h"\n')), ("b.h", "absent"), ("user/b.h", "absent")]


def test_an_in_memory_header_wins_and_is_scanned_from_its_own_folder(tree):
    (tree / "m.h").write_text("on disk")
    (tree / "sub").mkdir()
    headers = {"m.h": '#include "x.h"\n', "sub/n.h": '#include "y.h"\n'}
    found = _resolve(tree, '#include "m.h"\n#include "o.h"\n', headers=headers)
    assert _states(found) == [("o.h", "absent"), ("sub/y.h", "absent"), ("x.h", "absent")]
    assert found.includes_known is True and found.sure is False
    # include_next skips in-memory headers: NVRTC looks on disk
    assert _states(_resolve(tree, '#include_next "m.h"\n', headers={"m.h": ""})) == [
        ("m.h", _digest(b"on disk"))]
    # nothing on disk looked at: no stamps
    found = _resolve(tree, '#include "m.h"\n', headers={"m.h": ""})
    assert (found.path_states, found.stamps, found.includes_known) == ((), (), True)
    assert not _resolve(tree, "", headers={"m.h": "#include NAME\n"}).includes_known


def test_a_pre_included_file_is_searched_from_the_current_folder(tree):
    (tree / "p.h").write_text("#include <q.h>\n")
    found = _resolve(tree, "", ["--pre-include=p.h", "-Iuser"])
    assert _states(found) == [("p.h", _digest(b"#include <q.h>\n")), ("user/q.h", "absent")]
    assert found.includes_known is True


def test_a_macro_include_in_a_header_on_disk_makes_the_result_uncertain(tree):
    (tree / "user" / "m.h").write_text("#include NAME\n")
    assert _resolve(tree, "#include <m.h>\n", ["-Iuser"]).includes_known is False
    (tree / "user" / "m.h").write_text("#include <n.h>\n")
    assert _resolve(tree, "#include <m.h>\n", ["-Iuser"]).includes_known is True


def test_a_probed_user_header_is_keyed_but_not_followed(tree):
    (tree / "user" / "p.h").write_text("#include <q.h>\n")
    assert _states(_resolve(tree, "#if __has_include(<p.h>)\n#endif\n", ["-Iuser"])) == [
        ("user/p.h", _digest(b"#include <q.h>\n"))]


def test_headers_that_include_themselves_are_read_once(tree):
    (tree / "user" / "a.h").write_text("#include <a.h>\n#include <t.h>\n")
    (tree / "tc1" / "t.h").write_text("#include <t.h>\n")
    assert _states(_resolve(tree, "#include <a.h>\n", ["-Iuser"])) == [
        ("user/a.h", _digest(b"#include <a.h>\n#include <t.h>\n")), ("user/t.h", "absent")]


def test_a_user_folder_inside_the_toolchain_is_keyed_as_a_user_folder(tree):
    (tree / "tc1" / "a.h").write_text("a")
    assert _states(_resolve(tree, "#include <a.h>\n", ["-Itc1"])) == [("tc1/a.h", _digest(b"a"))]


def test_a_toolchain_folder_named_through_a_link_is_still_the_toolchain(tree):
    """/usr/local/cuda is often a link: a header's own folder, named through it, is the toolchain's
    and not keyed."""
    os.symlink(tree / "tc1", tree / "tc_link")
    (tree / "tc1" / "tc.h").write_text('#include "x.h"\n')
    (tree / "tc1" / "x.h").write_text("\n")
    assert _states(_resolve(tree, "#include <tc.h>\n", ["-Iuser"], tc=("tc_link",))) == [
        ("user/tc.h", "absent")]


def test_a_toolchain_header_that_includes_a_file_outside_the_toolchain_keys_it(tree):
    (tree / "tc1" / "tc.h").write_text('#include "../outside.h"\n')
    (tree / "outside.h").write_text("out")
    assert _states(_resolve(tree, "#include <tc.h>\n", ["-Iuser"])) == [
        ("tc1/../outside.h", _digest(b"out")), ("user/tc.h", "absent")]


def test_dot_dot_is_kept_through_a_link_as_the_kernel_reads_it(tree):
    """``lnk/../x.h`` with ``lnk`` a link to ``deep/inner`` is ``deep/x.h``, not ``./x.h``."""
    (tree / "deep" / "inner").mkdir(parents=True)
    os.symlink(tree / "deep" / "inner", tree / "lnk")
    (tree / "deep" / "x.h").write_text("deep")
    (tree / "x.h").write_text("here")
    assert _states(_resolve(tree, '#include "lnk/../x.h"\n#include "./y.h"\n')) == [
        ("lnk/../x.h", _digest(b"deep")), ("y.h", "absent")]


def test_a_relative_toolchain_folder_is_followed_through_dot_dot(tree):
    (tree / "tc1" / "sub").mkdir()
    (tree / "tc1" / "a.h").write_text("#include <u.h>\n")
    (tree / "user" / "u.h").write_text("u")
    found = includes.resolve("#include <sub/../a.h>\n", "k.cu", {}, ["-Iuser"], ["tc1"])
    assert _states(found) == [("user/sub/../a.h", "absent"), ("user/u.h", _digest(b"u"))]


def test_the_state_of_each_kind_of_path(tree):
    (tree / "folder.h").mkdir()
    (tree / "file.h").write_text("f")
    os.symlink("loop.h", tree / "loop.h")
    found = _resolve(tree, '#include "folder.h"\n#include "file.h/x.h"\n#include "loop.h"\n'
                           '#include "nul\0.h"\n#include "/proc/self/mem"\n')
    assert _states(found) == [("/proc/self/mem", "error:EIO"), ("file.h/x.h", "absent"),
                              ("folder.h", "dir"), ("loop.h", "error:ELOOP"),
                              ("nul\0.h", "absent")]
    # the stamps of each: what still_valid compares with, and it holds while nothing changes
    assert dict(found.stamps[1])[str(tree / "folder.h")] == ("dir",)
    assert dict(found.stamps[1])[str(tree / "nul\0.h")] == ("error", 2)
    assert includes.still_valid(found.stamps)


def test_a_fifo_is_refused_with_the_next_step(tree):
    os.mkfifo(tree / "user" / "f.h")
    with pytest.raises(ValueError, match=r"#include 'f.h' names .*f.h, which is not a regular file"
                                         r".*Next step: remove it"):
        _resolve(tree, "#include <f.h>\n", ["-Iuser"])


def test_a_header_that_fails_to_open_is_keyed_by_its_error(tree, monkeypatch):
    (tree / "user" / "a.h").write_text("a")
    real = os.open

    def refuse(path, *args, **kwargs):
        if str(path).endswith("a.h"):
            raise PermissionError(13, "denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    assert _states(_resolve(tree, "#include <a.h>\n", ["-Iuser"])) == [("user/a.h", "error:EACCES")]


def test_a_header_swapped_for_a_fifo_after_its_stat_is_not_read(tree, monkeypatch):
    import stat

    (tree / "user" / "regular").write_text("r")
    os.mkfifo(tree / "user" / "a.h")
    real = os.stat
    monkeypatch.setattr(os, "stat", lambda path, *a, **k: real(
        tree / "user" / "regular" if str(path).endswith("a.h") else path, *a, **k))
    found = _resolve(tree, "#include <a.h>\n", ["-Iuser"])
    states = _states(found)
    monkeypatch.undo()
    assert states == [("user/a.h", "error:EINVAL")]
    assert found.stamps[1][0][1][0] == stat.S_IFIFO


def test_a_header_at_the_size_bound_is_hashed_whole(tree, monkeypatch):
    monkeypatch.setattr(includes, "MAX_HEADER_BYTES", 10)
    (tree / "user" / "fits.h").write_bytes(b"// 10 byte")
    assert _states(_resolve(tree, "#include <fits.h>\n", ["-Iuser"])) == [
        ("user/fits.h", _digest(b"// 10 byte"))]


def test_the_witness_sees_an_edit_and_a_move_of_the_current_folder(tree, monkeypatch):
    (tree / "a.h").write_text("a")
    found = _resolve(tree, '#include "a.h"\n')
    assert includes.still_valid(found.stamps)
    monkeypatch.chdir(tree / "user")
    assert not includes.still_valid(found.stamps)
    monkeypatch.chdir(tree)
    assert includes.still_valid(found.stamps)
    (tree / "a.h").write_text("ab")
    assert not includes.still_valid(found.stamps)

    def gone():
        raise FileNotFoundError(2, "the current folder was removed")

    monkeypatch.setattr(os, "getcwd", gone)
    assert not includes.still_valid((str(tree), ()))
    assert includes.still_valid(())
    assert includes.still_valid(includes.Inputs((), (), True).stamps)
    assert not includes.Inputs((), (), True).sure
    # one Inputs is kept per program in memory: no per-instance dict, and no attribute misspelt
    with pytest.raises(AttributeError):
        includes.Inputs((), (), True).witnes = ()


def test_watching_adds_the_files_read_and_the_folders_an_include_of_them_is_looked_up_in(tree):
    (tree / "user" / "b").mkdir()
    header = tree / "user" / "b" / "h.h"
    header.write_text("\n")
    base = _resolve(tree, '#include "k.h"\n')
    assert includes.watching(base.stamps, [], [str(tree)]) is base.stamps
    assert includes.watching((), [], [str(tree)]) == ()
    os.utime(tree, ns=(0, 10**9))  # a file made below is then seen in the folder's time
    watched = includes.watching(base.stamps, [str(header)], [str(tree), str(tree / "gone")])
    cwd, entries = watched
    assert cwd == str(tree) and entries[0] == base.stamps[1][0]
    assert entries[1] == (str(header), _file_signature(header))
    folders = dict(entries[2:])
    assert all(path.endswith(os.sep) and os.sep * 2 not in path for path in folders)
    st = os.stat(tree)
    assert folders[str(tree) + os.sep] == ("folder", st.st_ino, st.st_mtime_ns)
    for folder in (tree / "b", tree / "user" / "b", tree / "user" / "b" / "b", tree / "gone",
                   tree / "gone" / "user" / "b"):
        assert str(folder) + os.sep in folders
    assert folders[str(tree / "gone") + os.sep] == ("error", 2)
    assert includes.still_valid(watched)
    (tree / "gone").mkdir()  # made where an include "h.h" would be looked up first
    assert not includes.still_valid(watched)
    os.rmdir(tree / "gone")
    assert not includes.still_valid(watched)  # the current folder's time moved with it
    # no stamps before: the current folder is taken now
    assert includes.watching((), [str(header)], [])[0] == str(tree)


def test_searched_folders_are_the_programs_the_current_the_headers_and_the_user_folders(tree):
    assert includes.searched_folders("src/k.cu", {"h/m.h": "", "n.h": ""}, ["-Iuser", "-Ia/../b"]
                                     ) == [str(tree / "src"), str(tree), str(tree / "h"), str(tree),
                                           str(tree / "user"), str(tree) + "/a/../b"]


def test_not_utf8_names_the_byte_and_where(tree):
    try:
        b"ab\xe9".decode()
    except UnicodeDecodeError as exc:
        error = includes.not_utf8("pkg:k.cu", exc)
    assert isinstance(error, ValueError)
    assert str(error) == "pkg:k.cu is not UTF-8 text (byte 0xe9 at offset 2); save it as UTF-8"


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package of a unique name in tmp/site, importable; yields (name, its folder)."""
    import uuid

    name = "incpkg_" + uuid.uuid4().hex[:12]
    folder = tmp_path / "site" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return name, folder


@pytest.mark.timeout(30)
def test_from_package_reads_the_siblings_included_and_nothing_outside_the_package(package):
    name, folder = package
    files = {
        "k/ops.cu": ('#include "a.h"\n#include "common/b.h"\n#include "../up.h"\n'
                     '#include "../../out.h"\n#include "/abs.h"\n#include "c\\\\d.h"\n'
                     '#include "C:e.h"\n#include "dir.h"\n#if __has_include("p.h")\n#endif\n'
                     '#include "a.h"\n'),
        "k/a.h": '#include "a.h"\n#include "n.h"\n',  # itself again, and a sibling of its own
        "a.h": "the package root's, shadowed by the sibling",
        "k/n.h": "n", "common/b.h": '#include "c.h"\n', "common/c.h": "c", "up.h": "up",
        "k/c\\d.h": "backslash", "k/C:e.h": "drive", "k/p.h": "probed", "../out.h": "outside",
    }
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (folder / "k" / "dir.h").mkdir()
    text, headers = includes.from_package(name, "k/ops.cu")
    assert text == files["k/ops.cu"]
    assert headers == {"a.h": files["k/a.h"], "n.h": "n", "common/b.h": files["common/b.h"],
                       "c.h": "c", "../up.h": "up"}


def test_from_package_refuses_a_missing_resource_and_text_that_is_not_utf8(package):
    name, folder = package
    with pytest.raises(FileNotFoundError, match=f"no resource 'none.cu' in package '{name}'"):
        includes.from_package(name, "none.cu")
    (folder / "k.cu").write_text('#include "bad.h"\n')
    (folder / "bad.h").write_bytes(b"// caf\xe9\n")
    with pytest.raises(ValueError, match=f"^{name}:bad.h is not UTF-8 text \\(byte 0xe9 at offset "
                                         "6\\); save it as UTF-8$"):
        includes.from_package(name, "k.cu")


@pytest.mark.parametrize("source, sure", [
    ('extern "C" __global__ void k() {}\n', True),
    ("#include <a.h>\n#include <b/c.h>\n", True),
    ('const char *s = "\\n";\n#include <a.h>\n', True),
    ("#inc\\\nlude <a.h>\n", True),  # a splice the scan joins: the include it took
    ("#inc\\\r\nlude <a.h>\n", True),
    ("#include <a.h>\n// include x\n", False),
    ("??=include <a.h>\n", False),
    ("#\\u0069nclude <a.h>\n", False),
    ("#\\U00000069nclude <a.h>\n", False),
    ("#import <a.h>\n", False),
    ("#inc\\ \nlude <a.h>\n", False),  # a backslash and blanks: a splice to some preprocessors
    ("#inc\\\t\r\nlude <a.h>\n", False),
    ("#if __has_include(<a.h>)\n#endif\n", False),
])
def test_sure_only_where_every_include_word_is_one_the_scan_took(tree, source, sure):
    assert _resolve(tree, source).sure is sure


def test_a_first_resolve_of_angle_includes_compiles_no_regular_expression():
    """A kernel of <...> includes takes the fast path at every compile(): the pattern for a
    backslash and blanks before a line break is compiled only for a text that has a backslash."""
    from tests._support import run_json

    got = run_json("""
        import json, re
        from cudaload.compile.includes import search as includes
        compiled = []
        real = re._compile
        re._compile = lambda *a, **k: compiled.append(a[0]) or real(*a, **k)
        found = includes.resolve('#include <cuda_fp16.h>\\n#pragma once\\n', "k.cu", {}, (), [])
        print(json.dumps({"sure": found.sure, "compiled": compiled}))
    """)
    assert got == {"sure": True, "compiled": []}
