"""tests/support/file_groups.py: the units of work pytest-xdist deals to its workers."""

from __future__ import annotations

from tests.support.file_groups import scope_of


def test_a_file_is_a_unit_of_its_own() -> None:
    assert scope_of("tests/airflow/test_operator.py::test_x[a]") == "tests/airflow/test_operator.py"
    assert scope_of("tests/airflow/test_operator.py::Cls::test_y") == "tests/airflow/test_operator.py"


def test_the_deployment_tests_are_one_unit_whatever_their_file() -> None:
    assert {
        scope_of("tests/deployment/test_attach.py::test_a"),
        scope_of("tests/deployment/test_browser.py::test_b[x]"),
        scope_of("tests/deployment/test_deployment.py::test_c"),
    } == {"tests/deployment/"}
    assert scope_of("tests/deployments_elsewhere/test_d.py::test_d") == "tests/deployments_elsewhere/test_d.py"
