"""The audit every generated function passes before it runs: only the engine's own names,
attributes and a few pure builtins; no imports, dunders, nested functions or lambdas."""
import pytest

from p4target.engine import ProgramLoadError
from p4target.engine.loader.codegen import Namespace, audit, int_literal, str_literal


@pytest.mark.parametrize("body, offence", [
    ("__import__('os')", "name '__import__'"),
    ("_tcm.__globals__", "attribute '__globals__'"),
    ("P.__class__", "attribute '__class__'"),
    ("().__class__.__base__.__subclasses__()", "attribute '__subclasses__'"),
    ("import os", "construct Import"),
    ("open('/etc/passwd')", "name 'open'"),
    ("eval('1')", "name 'eval'"),
    ("x = lambda: 0", "construct Lambda"),
    ("global F", "construct Global"),
    ("with P: pass", "construct With"),
    ("secret = 1", "local 'secret'"),
    ("P.F.clear()", "attribute 'clear'"),
    ("f'{P}'", "construct JoinedStr"),
])
def test_audit_refuses_what_generated_code_never_contains(body, offence):
    with pytest.raises(ProgramLoadError, match="generated code uses " + offence.replace("(", r"\(")):
        audit(f"def _act1(P, D):\n    F = P.F; V = P.V; NX = P.NX\n    {body}")


def test_audit_refuses_more_than_one_function_and_nested_ones():
    with pytest.raises(ProgramLoadError, match="not exactly one function"):
        audit("def _act1(P):\n    pass\nprint(1)")
    with pytest.raises(ProgramLoadError, match="nested function"):
        audit("def _act1(P):\n    def _x2(P):\n        pass")
    with pytest.raises(ProgramLoadError, match="bad header"):
        audit("def evil(P):\n    pass")


def test_generated_functions_run_without_the_real_builtins():
    ns = Namespace()
    fn = ns.compile_fn("act", "P, D", ["return len(D) + max(D)"])
    assert fn(type("P", (), {"F": [], "V": [], "NX": []})(), [1, 5]) == 7
    assert "open" not in ns["__builtins__"] and "__import__" not in ns["__builtins__"]


def test_literals_take_only_their_own_type():
    assert int_literal(5, "x") == "5" and str_literal("a'b\n", "x") == repr("a'b\n")
    for bad in ("5", True, 5.0, None, [5]):
        with pytest.raises(ProgramLoadError, match="x must be an integer"):
            int_literal(bad, "x")
    with pytest.raises(ProgramLoadError, match="x must be a string"):
        str_literal(5, "x")
