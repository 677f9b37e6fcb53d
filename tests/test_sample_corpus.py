"""The shipped sample corpus: its mbox copies and index are current, and it stays private."""

from __future__ import annotations

import email
import email.policy
import ipaddress
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spamnb.mail.sources import read_mbox

CORPUS = Path(__file__).resolve().parent.parent / "sample_corpus"
MESSAGES = sorted(p for p in (CORPUS / "maildir").glob("*/*/*") if not p.name.startswith("."))
DOCUMENTATION_NETS = tuple(ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
IPV4 = re.compile(rb"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d.])")
HOST = re.compile(rb"(?:@|https?://)([a-z0-9-]+(?:\.[a-z0-9-]+)+)", re.IGNORECASE)
RESERVED = re.compile(r"(^|\.)(example\.(com|org|net)|[a-z0-9-]+\.(test|invalid))$")


def derive(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(folder / "derive.py"), *args], capture_output=True, text=True, check=False
    )


def test_mbox_copies_and_index_are_current() -> None:
    result = derive(CORPUS, "--check")
    assert result.returncode == 0, result.stderr


def test_check_names_a_stale_file_and_deriving_mends_it(tmp_path: Path) -> None:
    copy = tmp_path / "sample_corpus"
    shutil.copytree(CORPUS, copy)
    message = next((copy / "maildir" / "spam" / "cur").iterdir())
    message.write_bytes(message.read_bytes().replace(b"\n\n", b"\n\nFrom the editor: one more line\n", 1))
    stale = derive(copy, "--check")
    assert stale.returncode == 1
    assert "spam.mbox is stale" in stale.stderr and "ham.mbox" not in stale.stderr
    assert derive(copy).returncode == 0
    assert derive(copy, "--check").returncode == 0
    assert b"\n>From the editor: one more line\n" in (copy / "spam.mbox").read_bytes()


@pytest.mark.parametrize("kind", ["ham", "spam"])
def test_each_mbox_message_is_its_maildir_file(kind: str) -> None:
    files = sorted((p for p in MESSAGES if p.parts[-3] == kind), key=lambda p: p.name)
    with open(CORPUS / f"{kind}.mbox", "rb") as stream:
        from_mbox = [m.data for m in read_mbox(stream, f"{kind}.mbox", kind)]
    assert from_mbox == [p.read_bytes() for p in files]


def test_index_lists_every_message_once_under_its_folder_label() -> None:
    lines = (CORPUS / "index").read_text(encoding="ascii").splitlines()
    listed = {path: label for label, path in (line.split(" ", 1) for line in lines)}
    assert len(listed) == len(lines) == len(MESSAGES)
    assert {CORPUS / path for path in listed} == set(MESSAGES)
    assert all(path.split("/")[1] == label for path, label in listed.items())


def hosts_not_reserved(data: bytes, msg: email.message.Message) -> list[bytes]:
    """The IP addresses outside the documentation ranges and the host names that are not
    reserved, in the message as stored and in its decoded parts."""
    text = data.replace(b"=\n", b"") + b"".join(  # quoted-printable soft breaks joined
        part.get_payload(decode=True) or b"" for part in msg.walk() if not part.is_multipart()
    )
    bad = [found for found in IPV4.findall(text) if not any(ipaddress.ip_address(found.decode()) in net for net in DOCUMENTATION_NETS)]
    # a host of digits is an address, checked above
    return bad + [host for host in HOST.findall(text) if not host.replace(b".", b"").isdigit() and not RESERVED.search(host.decode().lower().rstrip("."))]


@pytest.mark.parametrize("path", MESSAGES, ids=lambda p: p.name[:24])
def test_message_parses_and_names_only_reserved_hosts(path: Path) -> None:
    data = path.read_bytes()
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert not msg.defects and not any(part.defects for part in msg.walk())
    assert hosts_not_reserved(data, msg) == []
