"""Entry syntax, validation of every bad input, grain matches, versions."""

from __future__ import annotations

import pytest

from saltext.pkgstate.model import (
    Entry,
    Operator,
    PkgStateError,
    Policy,
    check_state_name,
    compare_versions,
    compile_grain_match,
    entries_from_mapping,
    entry_from_mapping,
    parse_entry,
    validate_revision,
    version_satisfies,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nginx", Entry("nginx", Policy.INSTALLED)),
        ("nginx>=1.20", Entry("nginx", Policy.INSTALLED, Operator.GE, "1.20")),
        (" nginx >= 1.20 ", Entry("nginx", Policy.INSTALLED, Operator.GE, "1.20")),
        ("nginx==1.2-3", Entry("nginx", Policy.INSTALLED, Operator.EQ, "1.2-3")),
        ("nginx=1:1.2", Entry("nginx", Policy.INSTALLED, Operator.EQ, "1:1.2")),
        ("nginx<2", Entry("nginx", Policy.INSTALLED, Operator.LT, "2")),
        ("nginx<=2", Entry("nginx", Policy.INSTALLED, Operator.LE, "2")),
        ("nginx>2~rc1", Entry("nginx", Policy.INSTALLED, Operator.GT, "2~rc1")),
        ("nginx@installed>=1", Entry("nginx", Policy.INSTALLED, Operator.GE, "1")),
        ("curl@latest", Entry("curl", Policy.LATEST)),
        ("curl@LATEST", Entry("curl", Policy.LATEST)),
        ("telnet@removed", Entry("telnet", Policy.REMOVED)),
        ("telnet@purged", Entry("telnet", Policy.PURGED)),
        ("telnet@absent<2.0", Entry("telnet", Policy.ABSENT, Operator.LT, "2.0")),
        ("libc6:i386", Entry("libc6:i386", Policy.INSTALLED)),
        ("libstdc++6", Entry("libstdc++6", Policy.INSTALLED)),
    ],
)
def test_parse_entry(text, expected) -> None:
    assert parse_entry(text) == expected


@pytest.mark.parametrize(
    "text", ["nginx", "nginx>=1.20", "nginx=1.2", "curl@latest", "t@absent<2"]
)
def test_entry_text_round_trips(text) -> None:
    assert str(parse_entry(text)) == text


def test_double_equals_is_stored_as_single() -> None:
    assert str(parse_entry("nginx==1.2")) == "nginx=1.2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nginx=>1.2", r"'nginx=>1.2': unknown operator '=>': allowed are <, <="),
        ("nginx=<1.2", r"unknown operator '=<'"),
        ("nginx!=1.2", r"unknown operator '!='"),
        ("nginx<>1.2", r"unknown operator '<>'"),
        (
            "nginx@latest>=1.2",
            r"'nginx@latest>=1.2': an operator cannot be combined with latest",
        ),
        ("nginx@latest=1.2", r"cannot be combined with latest"),
        ("nginx>=", r"'nginx>=': the version after the operator is empty"),
        ("nginx>=  ", r"the version after the operator is empty"),
        ("nginx>=abc", r"version 'abc' does not parse"),
        ("nginx>=1.2 3", r"version '1.2 3' does not parse"),
        ("nginx>=1.2$", r"version '1.2\$' does not parse"),
        ("nginx>=1:", r"version '1:' does not parse"),
        ("telnet@absent", r"absent needs a version condition"),
        ("telnet@removed<2", r"removed takes no version condition"),
        ("telnet@gone", r"unknown policy 'gone': allowed are installed, latest"),
        ("", r"empty entry"),
        ("   ", r"empty entry"),
        ("@latest", r"does not parse"),
        (">=1.2", r"does not parse"),
        ("-nginx", r"bad package name '-nginx'"),
        ("ngi$nx", r"bad package name"),
        ("nginx 1.2", r"does not parse"),
    ],
)
def test_bad_entry(text, message) -> None:
    with pytest.raises(PkgStateError, match=message):
        parse_entry(text)


def test_error_is_a_value_error() -> None:
    assert issubclass(PkgStateError, ValueError)


def test_non_string_entry_says_to_quote() -> None:
    with pytest.raises(PkgStateError, match="quote versions"):
        parse_entry(1.2)  # type: ignore[arg-type]


def test_duplicate_package_names_both_entries() -> None:
    with pytest.raises(
        PkgStateError,
        match=r"two entries for package 'nginx' in one revision: "
        r"'nginx>=1.2' and 'nginx@latest'",
    ):
        validate_revision(["nginx>=1.2", "curl", "nginx@latest"])


def test_identical_duplicates_are_refused_too() -> None:
    with pytest.raises(PkgStateError, match="two entries for package 'vim'"):
        validate_revision(["vim", "vim"])


def test_validate_reports_every_problem_at_once() -> None:
    with pytest.raises(PkgStateError) as info:
        validate_revision(["a=>1", "b@latest<2", "c"])
    assert "'a=>1'" in str(info.value)
    assert "'b@latest<2'" in str(info.value)


def test_validate_sorts_by_name() -> None:
    entries = validate_revision(["zsh", parse_entry("bash@latest")])
    assert [e.name for e in entries] == ["bash", "zsh"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, "nginx"),
        ("", "nginx"),
        ("latest", "nginx@latest"),
        (">=1.20", "nginx>=1.20"),
        ("1.2-3", "nginx=1.2-3"),
        ("absent<2", "nginx@absent<2"),
        ("@purged", "nginx@purged"),
        ({"policy": "installed", "op": ">=", "version": "1.2"}, "nginx>=1.2"),
        ({"version": ">=1.2"}, "nginx>=1.2"),
        ({"version": "1.2"}, "nginx=1.2"),
        ({"policy": "removed"}, "nginx@removed"),
    ],
)
def test_entry_from_mapping(spec, expected) -> None:
    assert str(entry_from_mapping("nginx", spec)) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (1.2, "quote versions"),
        ({"policy": "latest", "op": ">="}, "cannot be combined with latest"),
        ({"pin": "1"}, r"unknown keys \['pin'\]"),
        ({"version": 1.2}, "must be strings"),
        ("=>1", "unknown operator"),
    ],
)
def test_bad_mapping_spec(spec, message) -> None:
    with pytest.raises(PkgStateError, match=message):
        entry_from_mapping("nginx", spec)


def test_entries_from_mapping_collects_problems() -> None:
    with pytest.raises(PkgStateError, match=r"(?s)a: .*b"):
        entries_from_mapping({"a": 1, "b": "latest>=2"})


@pytest.mark.parametrize("name", ["web", "org.base", "a-b_c", "minion:evil-0001"])
def test_good_state_names(name) -> None:
    assert check_state_name(name) == name


@pytest.mark.parametrize("name", ["", "Web", "-web", "a b", "minion:", "x" * 300])
def test_bad_state_names(name) -> None:
    with pytest.raises(PkgStateError):
        check_state_name(name)


GRAINS = {
    "os": "Ubuntu",
    "os_family": "Debian",
    "roles": ["web", "db"],
    "ip_interfaces": {"eth0": ["10.0.0.5"]},
    "cpuarch": "x86_64",
    "num_cpus": 4,
}


@pytest.mark.parametrize(
    ("expr", "matches"),
    [
        ("os:Ubuntu", True),
        ("G@os:ubuntu", True),
        ("G@os:Ub*", True),
        ("os:Debian", False),
        ("roles:web", True),
        ("roles:mail", False),
        ("G@ip_interfaces:eth0:10.0.*", True),
        ("ip_interfaces:eth1:10.*", False),
        ("P@os:(Debian|Ubuntu)", True),
        ("P@os:buntu", False),  # anchored at the start, as Salt's re.match
        ("P@os_family:deb", True),
        ("num_cpus:4", True),
        ("missing:x", False),
    ],
)
def test_grain_match(expr, matches) -> None:
    assert compile_grain_match(expr).matches(GRAINS) is matches


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("os", "does not compile"),
        ("os:", "does not compile"),
        (":Ubuntu", "does not compile"),
        ("P@os:(Debian", r"does not compile: regex '\(Debian'"),
        ("P@os:*x", "does not compile"),
        ("L@a,b", "only G@ .* and P@"),
        ("", "does not compile"),
    ],
)
def test_bad_grain_match(expr, message) -> None:
    with pytest.raises(PkgStateError, match=message):
        compile_grain_match(expr)


@pytest.mark.parametrize(
    ("a", "b", "cmp"),
    [
        ("1.2", "1.2", 0),
        ("1.10", "1.9", 1),
        ("1.2", "1.2.1", -1),
        ("1.2~rc1", "1.2", -1),
        ("1.2a", "1.2", 1),
        ("1.2a", "1.2.1", -1),
        ("1:1.0", "2.0", 1),
        ("1.0-2", "1.0-10", -1),
        ("1.0-2.el9", "1.0-2.el9", 0),
        ("2.0", "10", -1),
        ("1.0", "1.0-1", -1),
    ],
)
def test_compare_versions(a, b, cmp) -> None:
    assert compare_versions(a, b) == cmp
    assert compare_versions(b, a) == -cmp


@pytest.mark.parametrize(
    ("installed", "op", "wanted", "ok"),
    [
        ("1.20.1-1", Operator.GE, "1.20", True),
        ("1.18-4", Operator.GE, "1.20", False),
        ("1.2-3", Operator.EQ, "1.2", True),  # no release in the condition
        ("1.2-3", Operator.EQ, "1.2-4", False),
        ("1:1.2-3", Operator.EQ, "1.2-3", True),  # = without epoch ignores it
        ("1:1.2-3", Operator.EQ, "0:1.2-3", False),
        ("1.9", Operator.LT, "2.0", True),
        ("2.0-1", Operator.LT, "2.0", False),
        ("2.0", Operator.LE, "2.0", True),
        ("2.1", Operator.GT, "2.0", True),
    ],
)
def test_version_satisfies(installed, op, wanted, ok) -> None:
    assert version_satisfies(installed, op, wanted) is ok


def test_a_name_beyond_the_package_managers_limits_is_refused_briefly():
    from saltext.pkgstate.model import PACKAGE_NAME_MAX

    huge = "a" * 100_000
    with pytest.raises(PkgStateError) as refused:
        parse_entry(huge)
    message = str(refused.value)
    assert "100000 characters" in message and len(message) < 300
    with pytest.raises(PkgStateError, match=f"longer than {PACKAGE_NAME_MAX}"):
        parse_entry("a" * (PACKAGE_NAME_MAX + 1) + ">=1.0")
    assert parse_entry("a" * PACKAGE_NAME_MAX).name == "a" * PACKAGE_NAME_MAX
    with pytest.raises(PkgStateError, match=r"version .* is longer than"):
        parse_entry("nginx>=" + "1" * 129)
