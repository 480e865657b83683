"""grader.checking.uses: the static look at an answer's source that backs some run-time checks.

It must find a forbidden function however the answer reaches it, and must not punish an answer for
an import it never uses (the notebook's import line, copied) or for a self-check at cell level.
"""
import pytest

from grader.checking import uses

NAMES = {"checkpoint_sequential", "one_hot", "_dynamo", "disable"}

FOUND = {
    "attribute": ("def f(l):\n    return F.one_hot(l)", {"one_hot"}),
    "bound at cell level": ("f = F.one_hot", {"one_hot"}),
    "as a string": ("def f(l):\n    return getattr(F, 'one_hot')(l)", {"one_hot"}),
    "imported and called": ("from torch.utils.checkpoint import checkpoint_sequential\n"
                            "def f(b, x):\n    return checkpoint_sequential(b, 2, x)", {"checkpoint_sequential"}),
    "imported under an alias": ("from torch.utils.checkpoint import checkpoint_sequential as cs\n"
                                "def f(b, x):\n    return cs(b, 2, x)", {"checkpoint_sequential"}),
    "a module alias": ("import torch._dynamo as d\ndef f(x):\n    return d.disable(x)", {"_dynamo", "disable"}),
}
NOT_FOUND = {
    "imported, never used": "from torch.utils.checkpoint import checkpoint, checkpoint_sequential\n"
                            "def f(b, x):\n    return checkpoint(b, x, use_reentrant=False)",
    "a dotted import": "import torch._dynamo\ndef f(x):\n    return x.relu()",
    "a self-check assert": "def f(l):\n    return l\nassert torch.equal(f(l), F.one_hot(l, 3))",
    "a self-check call": "def f(l):\n    return l\nprint(F.one_hot(l, 3))",
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_a_forbidden_function_is_found_however_it_is_reached(case):
    source, expected = FOUND[case]
    assert uses(source, NAMES, bare=True) == expected


@pytest.mark.parametrize("case", sorted(NOT_FOUND))
def test_unused_imports_and_self_checks_do_not_count(case):
    assert uses(NOT_FOUND[case], NAMES, bare=True) == set()


def test_self_checks_count_where_a_cell_level_call_could_change_the_grade():
    source = "def f(x):\n    return x\ntorch._dynamo.config.suppress_errors = True\nprint(torch._dynamo.explain(f)(x))"
    assert uses(source, NAMES) == {"_dynamo"}              # the assignment counts in any case
    assert uses("print(torch._dynamo.explain(f)(x))", NAMES) == set()
    assert uses("print(torch._dynamo.explain(f)(x))", NAMES, self_checks=True) == {"_dynamo"}
