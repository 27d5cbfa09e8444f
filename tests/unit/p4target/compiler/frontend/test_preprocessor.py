"""Preprocessor: includes, macros, conditionals and line origins."""
from __future__ import annotations

import pytest

from p4target.compiler.preprocessor import BUILTIN_INCLUDE_DIR, preprocess_file, preprocess_text
from p4target.errors import CompileError


def lines_of(result):
    return [line for line in result.text.split("\n")]


def test_object_like_define_expands_identifiers_only():
    r = preprocess_text('#define W 8\nbit<W> x; // W\n"W" Wide W\n')
    assert lines_of(r)[1] == "bit<8> x;  "
    assert lines_of(r)[2] == '"W" Wide 8'


def test_function_like_define_and_nested_expansion():
    r = preprocess_text("#define ONE 1\n#define ADD(a, b) ((a) + (b))\nx = ADD(ONE, f(2, 3));\n")
    assert lines_of(r)[2] == "x = ((1) + (f(2, 3)));"


def test_function_like_name_without_call_is_left_alone():
    r = preprocess_text("#define F(a) a\nF;\n")
    assert lines_of(r)[1] == "F;"


def test_recursive_macro_does_not_loop():
    r = preprocess_text("#define A A + 1\nA\n")
    assert lines_of(r)[1] == "A + 1"


def test_undef():
    r = preprocess_text("#define X 1\n#undef X\nX\n")
    assert lines_of(r)[2] == "X"


def test_command_line_defines():
    r = preprocess_text("#ifdef FLAG\nyes VAL\n#endif\n", defines={"FLAG": None, "VAL": "7"})
    assert lines_of(r)[1] == "yes 7"


@pytest.mark.parametrize("cond,expected", [
    ("defined(A)", True), ("defined A && A > 2", True), ("!defined(B)", True),
    ("A == 3 || B", True), ("(A << 2) == 12", True), ("A - 3", False), ("B", False),
    ("A > 1 ? 0 : 1", False), ("0x10 == 16", True),
])
def test_if_expressions(cond, expected):
    r = preprocess_text(f"#define A 3\n#if {cond}\nyes\n#else\nno\n#endif\n")
    body = [line for line in lines_of(r) if line.strip()]
    assert body == (["yes"] if expected else ["no"])


def test_elif_chain_takes_first_true_branch_only():
    text = "#if 0\na\n#elif 1\nb\n#elif 1\nc\n#else\nd\n#endif\n"
    assert [line for line in lines_of(preprocess_text(text)) if line] == ["b"]


def test_nested_conditionals_inside_inactive_branch():
    text = "#ifdef NOPE\n#if 1\na\n#else\nb\n#endif\n#else\nc\n#endif\n"
    assert [line for line in lines_of(preprocess_text(text)) if line] == ["c"]


def test_comments_are_removed_and_lines_kept():
    r = preprocess_text("a /* one\ntwo */ b // c\n\"/* not */\"\n")
    assert lines_of(r)[:3] == ["a ", " b  ", '"/* not */"']
    assert r.origins[:3] == [("<input>", 1), ("<input>", 2), ("<input>", 3)]


def test_quoted_include_relative_and_origins(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inc.p4").write_text("first\nsecond\n")
    main = tmp_path / "main.p4"
    main.write_text('top\n#include "sub/inc.p4"\nbottom\n')
    r = preprocess_file(str(main))
    pairs = [(line, origin) for line, origin in zip(lines_of(r), r.origins) if line]
    assert pairs == [("top", (str(main), 1)), ("first", (str(tmp_path / "sub" / "inc.p4"), 1)),
                     ("second", (str(tmp_path / "sub" / "inc.p4"), 2)),
                     ("bottom", (str(main), 3))]


def test_include_dirs_searched(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "defs.p4").write_text("#define N 5\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "defs.p4"\nN\n')
    r = preprocess_file(str(main), include_dirs=[str(tmp_path / "lib")])
    assert [line for line in lines_of(r) if line] == ["5"]


def test_builtin_includes_resolve_to_own_files(tmp_path):
    main = tmp_path / "main.p4"
    main.write_text("#include <core.p4>\n#include <v1model.p4>\n#include <core.p4>\n")
    r = preprocess_file(str(main))
    files = {origin[0] for origin in r.origins}
    assert f"{BUILTIN_INCLUDE_DIR}/core.p4" in files
    assert f"{BUILTIN_INCLUDE_DIR}/v1model.p4" in files
    assert r.text.count("extern packet_in") == 1  # include guard


def test_line_directive_changes_reported_origin():
    r = preprocess_text('a\n#line 40 "gen.p4"\nb\nc\n')
    pairs = [(line, origin) for line, origin in zip(lines_of(r), r.origins) if line]
    assert pairs == [("a", ("<input>", 1)), ("b", ("gen.p4", 40)), ("c", ("gen.p4", 41))]


def test_line_continuation_joins_define():
    r = preprocess_text("#define LONG 1 + \\\n  2\nLONG\nafter\n")
    assert [line.strip() for line in lines_of(r) if line.strip()] == ["1 +   2", "after"]
    assert r.origins[lines_of(r).index("after")] == ("<input>", 4)


@pytest.mark.parametrize("text,message,line", [
    ("#frobnicate\n", "unknown preprocessor directive #frobnicate", 1),
    ("\n#include <nosuch.p4>\n", "included file not found: nosuch.p4", 2),
    ("#if 1\n", "unterminated #if", 1),
    ("#endif\n", "#endif without matching #if", 1),
    ("#else\n", "#else without matching #if", 1),
    ("\n\n#if 1 +\n#endif\n", "bad #if expression", 3),
    ("#error stop here\n", "#error stop here", 1),
    ("/* open\n", "unterminated comment", 1),
    ("#define F(a) a\nF(1, 2)\n", "macro F expects 1 arguments, got 2", 2),
])
def test_errors_name_the_problem_and_line(text, message, line):
    with pytest.raises(CompileError) as info:
        preprocess_text(text, "prog.p4")
    assert message in info.value.message
    assert (info.value.file, info.value.line) == ("prog.p4", line)


def test_include_cycle_is_an_error(tmp_path):
    (tmp_path / "a.p4").write_text('#include "b.p4"\n')
    (tmp_path / "b.p4").write_text('#include "a.p4"\n')
    with pytest.raises(CompileError, match="nested too deeply"):
        preprocess_file(str(tmp_path / "a.p4"))


def test_missing_file_is_a_compile_error(tmp_path):
    with pytest.raises(CompileError, match="cannot read"):
        preprocess_file(str(tmp_path / "absent.p4"))
