"""``nox -s upstream``: turn the patch series into pull requests to Salt (issue 18).

``patches/prs.toml`` maps every patch of the series, by its commit subject, to
one pull request (:mod:`.prmap`). For each pull request the workflow builds a
git repository on the PR's base - the newest 3008.x sdist on the package index,
or a Salt checkout given by path - with the PR's commits (its dependencies'
first, marked as such), the changelog fragments renamed to upstream's
``<issue>.<type>.md`` and the author identity of the submitter (:mod:`.build`);
writes the PR description in upstream's template (:mod:`.describe`); and runs
on that base what upstream's CI would: the PR's tests and upstream's tests of
the areas it touches, the linters the base pins (:mod:`.lint`), and the
changelog check (:mod:`.changelog`). :mod:`.cli` prints one table row per PR.

Modules:

    prmap       patches/prs.toml: load, validate (UpstreamError), match subjects
    patchfile   one git format-patch file: subject, author, changelog fragments
    changelog   upstream's changelog rule and the fragment names we give
    base        the base of a PR: newest 3008.x sdist or a checkout
    build       a PR's repository: base commit, deps, own commits
    describe    PR.md in upstream's pull request template
    lint        tool pins read from the base, tools run in their own venvs
    testrun     the tests upstream's CI would select, run on the base
    cli         python -m series.upstream
"""

from series.upstream.errors import UpstreamError

__all__ = ["UpstreamError"]
