"""One ``git format-patch`` file of ``patches/``: its subject, author and fragments.

The PR map names patches by commit subject, so that renumbering the series
(``0002`` split in two, fixes moved first) does not break it. The subject is
the ``Subject:`` header unfolded, without its ``[PATCH]`` prefix.
"""

from __future__ import annotations

import email.parser
import email.policy
import re
from dataclasses import dataclass
from email.utils import parseaddr
from pathlib import Path

from series.upstream.errors import UpstreamError

_PATCH_PREFIX = re.compile(r"^\[PATCH[^\]]*\]\s*")
# Domains reserved for examples and tests (RFC 2606, RFC 6761): an author there
# is a stand-in, never someone who can sign a contribution.
PLACEHOLDER_DOMAINS = (".invalid", ".example", ".test", ".localhost", "example.com")
# A fragment a patch adds: changelog/<issue>.<type>.md once its PR has an issue
# number (patches/prs.toml), changelog/+name.<type>.md until then
_ADDED_FILE = re.compile(r"^\+\+\+ b/(changelog/[^\s]+)$", re.MULTILINE)


@dataclass(frozen=True)
class PatchFile:
    """What the workflow needs to know of one patch file."""

    path: Path
    subject: str
    author_name: str
    author_email: str
    fragments: tuple[str, ...]

    @property
    def author(self) -> str:
        """``Name <email>`` as git writes it."""
        return f"{self.author_name} <{self.author_email}>"

    @property
    def author_is_placeholder(self) -> bool:
        """True when the author's e-mail is in a domain reserved for examples."""
        return is_placeholder_email(self.author_email)


def is_placeholder_email(address: str) -> bool:
    """True for an e-mail address whose domain is reserved for examples or tests."""
    domain = address.rpartition("@")[2].lower().rstrip(">")
    return not domain or any(
        domain == d.lstrip(".") or domain.endswith(d if d.startswith(".") else "." + d)
        for d in PLACEHOLDER_DOMAINS
    )


def read_patch(path: Path) -> PatchFile:
    """Parse one patch file; a file without a Subject or From is refused."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UpstreamError(f"cannot read {path}: {exc.strerror}") from None
    headers = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(
        raw
    )
    subject = " ".join(str(headers.get("Subject", "")).split())
    subject = _PATCH_PREFIX.sub("", subject)
    name, address = parseaddr(" ".join(str(headers.get("From", "")).split()))
    if not subject or not address:
        raise UpstreamError(
            f"{path.name} is not a git format-patch file (no Subject or From header)"
        )
    text = raw.decode("utf-8", errors="replace")
    fragments = tuple(
        m.group(1) for m in _ADDED_FILE.finditer(text) if _is_new_file(text, m.start())
    )
    return PatchFile(path, subject, name, address, fragments)


def _is_new_file(text: str, plus_line: int) -> bool:
    """True when the ``+++`` line at ``plus_line`` follows ``--- /dev/null``."""
    previous = text.rfind("\n", 0, plus_line - 1)
    return text[previous + 1 : plus_line].startswith("--- /dev/null")


def read_patches(patches_dir: Path, names: list[str]) -> list[PatchFile]:
    """The patches of ``names`` (``patches/series`` order), parsed."""
    return [read_patch(patches_dir / name) for name in names]
