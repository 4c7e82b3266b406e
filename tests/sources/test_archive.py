"""Safe extraction: every malicious member is refused, naming it; limits hold; good archives unpack."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from support.servers import make_tar, make_zip

from flatten.sources.archive import archive_format, extract_archive
from flatten.sources.env import ExtractLimits
from flatten.sources.package import FetchError

LIMITS = ExtractLimits()


def tar_with(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    i = tarfile.TarInfo(name)
    i.type = kind
    i.linkname = link
    return i


def extract(tmp_path: Path, data: bytes, fmt: str, limits: ExtractLimits = LIMITS) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    archive = tmp_path / f"a.{fmt}"
    archive.write_bytes(data)
    dest = tmp_path / "box" / "dest"
    extract_archive(archive, fmt, dest, limits=limits)
    return dest


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("x.zip", "zip"),
        ("x.tar.gz", "tar.gz"),
        ("x.tgz", "tar.gz"),
        ("x.tar.bz2", "tar.bz2"),
        ("x.tbz2", "tar.bz2"),
        ("x.tar.xz", "tar.xz"),
        ("x.txz", "tar.xz"),
        ("x.tar", "tar"),
        ("zip", "zip"),
        ("x.tf", None),
        ("x.gz", None),
    ],
)
def test_archive_format(name: str, fmt: str | None) -> None:
    assert archive_format(name) == fmt


def test_good_tar_and_zip_unpack_with_modes(tmp_path: Path) -> None:
    files = {"main.tf": "x", "scripts/run.sh": "#!/bin/sh\n", "a/b/c.txt": "c"}
    dest = extract(tmp_path / "t", make_tar(files), "tar.gz")
    assert (dest / "a/b/c.txt").read_text() == "c"
    assert (dest / "scripts/run.sh").stat().st_mode & stat.S_IXUSR
    dest = extract(tmp_path / "z", make_zip(files), "zip")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == sorted(files)


def test_internal_links_are_kept(tmp_path: Path) -> None:
    data = tar_with(
        (info("real.txt"), b"hi"),
        (info("link.txt", tarfile.SYMTYPE, "real.txt"), None),
        (info("sub/hard.txt", tarfile.LNKTYPE, "real.txt"), None),
    )
    dest = extract(tmp_path, data, "tar.gz")
    assert (dest / "link.txt").is_symlink() and (dest / "link.txt").read_text() == "hi"
    assert (dest / "sub/hard.txt").read_text() == "hi"


MALICIOUS_TAR = {
    "dotdot": ((info("../evil.txt"), b"x"),),
    "dotdot-deep": ((info("a/../../evil.txt"), b"x"),),
    "absolute": ((info("/tmp/evil.txt"), b"x"),),
    "symlink-to-etc": ((info("etc", tarfile.SYMTYPE, "/etc"), None),),
    "symlink-up": ((info("up", tarfile.SYMTYPE, "../.."), None),),
    "symlink-then-write-through": (
        (info("dir", tarfile.SYMTYPE, "/tmp"), None),
        (info("dir/evil.txt"), b"x"),
    ),
    "symlink-chain-escape": (
        (info("d", tarfile.SYMTYPE, "."), None),
        (info("e", tarfile.SYMTYPE, "d/.."), None),
    ),
    "hardlink-absolute": ((info("h", tarfile.LNKTYPE, "/etc/passwd"), None),),
    "hardlink-out": ((info("h", tarfile.LNKTYPE, "../outside.txt"), None),),
    "hardlink-missing": ((info("h", tarfile.LNKTYPE, "nothing-here"), None),),
    "char-device": ((info("null", tarfile.CHRTYPE), None),),
    "block-device": ((info("sda", tarfile.BLKTYPE), None),),
    "fifo": ((info("pipe", tarfile.FIFOTYPE), None),),
}


@pytest.mark.parametrize("case", sorted(MALICIOUS_TAR), ids=sorted(MALICIOUS_TAR))
def test_malicious_tar_members_are_refused(tmp_path: Path, case: str) -> None:
    (tmp_path / "box").mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    members = MALICIOUS_TAR[case]
    with pytest.raises(FetchError) as exc:
        extract(tmp_path, tar_with(*members), "tar.gz")
    assert "refus" in str(exc.value) or "outside" in str(exc.value)
    assert any(repr(m[0].name) in str(exc.value) for m in members)
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/evil.txt").exists()
    assert (tmp_path / "outside.txt").read_text() == "secret"


def zip_with(entries: list[tuple[str, bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, mode in entries:
            zi = zipfile.ZipInfo(name)
            zi.external_attr = mode << 16
            zf.writestr(zi, data)
    return buf.getvalue()


@pytest.mark.parametrize(
    "entries",
    [
        [("../evil.txt", b"x", 0o100644)],
        [("/abs.txt", b"x", 0o100644)],
        [("..\\evil.txt", b"x", 0o100644)],
        [("link", b"/etc", 0o120777)],
        [("link", b"../../x", 0o120777)],
        [("dev", b"", 0o020644)],
    ],
    ids=["dotdot", "absolute", "backslash-dotdot", "symlink-abs", "symlink-up", "device"],
)
def test_malicious_zip_members_are_refused(tmp_path: Path, entries: list[tuple[str, bytes, int]]) -> None:
    (tmp_path / "box").mkdir()
    with pytest.raises(FetchError) as exc:
        extract(tmp_path, zip_with(entries), "zip")
    assert repr(entries[0][0]) in str(exc.value)


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_too_many_files(tmp_path: Path, fmt: str) -> None:
    files = {f"f{i}.txt": "x" for i in range(11)}
    data = make_tar(files) if fmt != "zip" else make_zip(files)
    with pytest.raises(FetchError, match="more than 10 members"):
        extract(tmp_path, data, fmt, ExtractLimits(max_files=10))


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_too_large(tmp_path: Path, fmt: str) -> None:
    files = {"big.bin": b"\0" * 5000}
    data = make_tar(files) if fmt != "zip" else make_zip(files)
    with pytest.raises(FetchError, match="more than 4096 bytes"):
        extract(tmp_path, data, fmt, ExtractLimits(max_bytes=4096))


def test_corrupt_archive(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="error decompressing"):
        extract(tmp_path, b"not an archive", "tar.gz")


def test_refused_archive_through_the_fetcher_is_a_download_diagnostic(tmp_path: Path) -> None:
    from support.files import write_tree
    from support.servers import HTTPServer, Reply, serving
    from support.sources import call, run, source_env

    with serving(HTTPServer()) as srv:
        srv.routes["/evil.tgz"] = Reply(200, tar_with((info("../../evil.tf"), b"x")))
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/evil.tgz")})
        _, _, diags = run(root, source_env(tmp_path))
    assert [d.summary for d in diags] == ["Failed to download module"]
    assert "'../../evil.tf'" in diags[0].detail and "refusing" in diags[0].detail
    assert not list((tmp_path / "cache").glob("v1/packages/*"))
    assert not list((tmp_path / "cache").glob("v1/tmp/*"))


# -- headers and names bounded before they are read (docs/reliability.md, "Limits") ------------------

from support.fuzzing import TAR_END, ZipMember, pax_member, pax_record, tar_header, tar_member, zip_bytes  # noqa: E402

from flatten.sources.archive import MAX_HEADER, MAX_NAME  # noqa: E402

MIB = 1 << 20


def gz(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, compresslevel=1)


def refused(tmp_path: Path, data: bytes, fmt: str, match: str) -> str:
    with pytest.raises(FetchError, match=match) as exc:
        extract(tmp_path, data, fmt)
    assert len(str(exc.value)) < 600, "a name in a message is cut"
    return str(exc.value)


@pytest.mark.parametrize(
    "typeflag", [b"L", b"K", b"x", b"g"], ids=["longname", "longlink", "pax", "pax-global"]
)
def test_an_extended_header_over_1_mib_is_refused_before_it_is_read(tmp_path: Path, typeflag: bytes) -> None:
    size = MAX_HEADER + 1
    body = pax_record(b"path", b"a" * (size - 20)) if typeflag in b"xg" else b"a" * size
    data = (
        tar_member(b"././@LongLink", body[:size].ljust(size, b"\n"), typeflag)
        + tar_member(b"x", b"x")
        + TAR_END
    )
    refused(tmp_path, gz(data), "tar.gz", f"more than {MAX_HEADER}; refusing")


def test_a_chain_of_extended_headers_is_refused(tmp_path: Path) -> None:
    chain = b"".join(pax_member(pax_record(b"comment", b"%d" % i)) for i in range(10))
    refused(tmp_path, gz(chain + tar_member(b"x", b"x") + TAR_END), "tar.gz", "extended headers in a row")
    # a pax header and a long name, as GNU tar and Go write them, are fine
    ok = pax_member(pax_record(b"mtime", b"1.5")) + tar_member(
        b"././@LongLink", b"d/" + b"n" * 150 + b"\0", b"L"
    )
    dest = extract(tmp_path / "ok", gz(ok + tar_member(b"ignored", b"x") + TAR_END), "tar.gz")
    assert (dest / "d" / ("n" * 150)).read_bytes() == b"x"


def test_pax_global_headers_together_over_1_mib_are_refused(tmp_path: Path) -> None:
    glob = b"".join(
        pax_member(pax_record(b"comment%d" % i, b"c" * (MAX_HEADER // 2)), b"g")
        + tar_member(b"f%d" % i, b"x")
        for i in range(3)
    )
    refused(tmp_path, gz(glob + TAR_END), "tar.gz", "pax global headers of more than")


@pytest.mark.parametrize("form", ["gnu-S", "pax-0.1", "pax-1.0"])
def test_sparse_members_are_refused(tmp_path: Path, form: str) -> None:
    if form == "gnu-S":
        data = tar_member(b"sparse.bin", b"x" * 512, b"S")
    elif form == "pax-0.1":
        records = pax_record(b"GNU.sparse.map", b"0,1") + pax_record(b"GNU.sparse.size", b"1")
        data = pax_member(records) + tar_member(b"sparse.bin", b"x")
    else:
        records = pax_record(b"GNU.sparse.major", b"1") + pax_record(b"GNU.sparse.minor", b"0")
        data = pax_member(records) + tar_member(b"sparse.bin", b"99999999999\n" + b"\0" * 500)
    refused(tmp_path, gz(data + TAR_END), "tar.gz", "sparse file; refusing it")


@pytest.mark.parametrize(
    ("name", "match"),
    [
        (b"bad\xff\xfe.tf", "not valid UTF-8"),
        (b"new\nline.tf", "control character"),
        (b"tab\t.tf", "control character"),
        (b"esc\x1b[31m.tf", "control character"),
        (b"d/" * (MAX_NAME // 2) + b"x.tf", f"longer than {MAX_NAME} bytes"),
    ],
    ids=["not-utf8", "newline", "tab", "escape", "long"],
)
def test_member_names_that_could_not_be_written_as_they_are_are_refused(
    tmp_path: Path, name: bytes, match: str
) -> None:
    member = (
        pax_member(pax_record(b"path", name)) + tar_member(b"placeholder", b"x") if len(name) > 99 else b""
    )
    tar = member or tar_member(name, b"x")
    refused(tmp_path / "t", gz(tar + TAR_END), "tar.gz", match)
    refused(tmp_path / "z", zip_bytes([ZipMember(name, b"x", utf8=b"\xff" not in name)]), "zip", match)
    link = tar_member(b"link", b"", b"2", name) if len(name) < 100 else None
    if link is not None:
        refused(tmp_path / "l", gz(link + TAR_END), "tar.gz", match)


def test_zip_names_are_their_bytes_as_utf8_with_or_without_the_flag(tmp_path: Path) -> None:
    name = "modules/é/main.tf".encode()
    dest = extract(tmp_path / "a", zip_bytes([ZipMember(name, b"x", utf8=False)]), "zip")
    assert (dest / "modules" / "é" / "main.tf").read_bytes() == b"x"  # not cp437 'Ã©'
    refused(tmp_path / "b", zip_bytes([ZipMember(b"caf\xe9.tf", b"x", utf8=False)]), "zip", "not valid UTF-8")


def test_a_long_name_is_cut_in_the_message(tmp_path: Path) -> None:
    name = b"../" + b"a" * 500_000
    msg = refused(
        tmp_path,
        gz(pax_member(pax_record(b"path", name)) + tar_member(b"x", b"x") + TAR_END),
        "tar.gz",
        "aaaa",
    )
    assert "aaaa..." in msg and len(msg) < 600


def test_zip_central_directory_is_checked_before_zipfile_reads_it(tmp_path: Path) -> None:
    many = zip_bytes([ZipMember(b"f%d" % i) for i in range(LIMITS.max_files + 1)], count=1)  # a lying count
    refused(tmp_path / "a", many, "zip", f"more than {LIMITS.max_files} members")
    claims = zip_bytes([ZipMember(b"f")], count=LIMITS.max_files + 1)
    refused(tmp_path / "b", claims, "zip", f"more than {LIMITS.max_files} members")
    long_name = zip_bytes([ZipMember(b"n" * (MAX_NAME + 1), b"x")])
    refused(tmp_path / "c", long_name, "zip", f"longer than {MAX_NAME} bytes")
    huge_directory = zip_bytes([ZipMember(b"f")], cd_size=0xFFFFFFF0)
    refused(tmp_path / "d", huge_directory, "zip", "central directory of")


def test_zip_symlink_target_is_bounded_before_it_is_read(tmp_path: Path) -> None:
    member = ZipMember(b"link", b"a" * (MAX_NAME + 1), mode=0o120777)
    refused(tmp_path / "a", zip_bytes([member]), "zip", f"target is longer than {MAX_NAME} bytes")
    bad = ZipMember(b"link", b"\xff", mode=0o120777)
    refused(tmp_path / "b", zip_bytes([bad]), "zip", "target is not valid UTF-8")
    ok = extract(
        tmp_path / "c", zip_bytes([ZipMember(b"f", b"x"), ZipMember(b"link", b"f", mode=0o120777)]), "zip"
    )
    assert (ok / "link").read_bytes() == b"x"


MEMORY_CHILD = r"""
import sys, tempfile
from pathlib import Path
from flatten.sources.archive import extract_archive
from flatten.sources.env import ExtractLimits
from flatten.sources.package import FetchError
path, fmt = Path(sys.argv[1]), sys.argv[2]
try:
    extract_archive(path, fmt, Path(tempfile.mkdtemp()) / "d", limits=ExtractLimits())
    print("extracted")
except FetchError as exc:
    print("refused", len(str(exc)))
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would count the parent's pages.
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print(int(hwm.split()[1]) // 1024)
"""


def _huge_archives(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Small files whose headers claim 64 MiB (gzip and deflate make them small)."""
    import gzip
    import zipfile

    big = 64 * MIB
    out: dict[str, tuple[Path, str]] = {}
    for kind, typeflag in (("longname", b"L"), ("pax", b"x")):
        path = tmp_path / f"{kind}.tar.gz"
        with gzip.open(path, "wb", compresslevel=1) as f:
            f.write(tar_header(b"././@LongLink", big, typeflag))
            prefix = pax_record(b"path", b"a" * (big - 20))[:20] if typeflag == b"x" else b""
            f.write(prefix)
            for _ in range((big - len(prefix)) // MIB):
                f.write(b"a" * MIB)
            f.write(b"a" * ((big - len(prefix)) % MIB))
            f.write(tar_member(b"x", b"x") + TAR_END)
        out[kind] = (path, "tar.gz")
    path = tmp_path / "symlink.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zi = zipfile.ZipInfo("link")
        zi.external_attr = 0o120777 << 16
        zi.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(zi, "w", force_zip64=True) as w:
            for _ in range(big // MIB):
                w.write(b"a" * MIB)
    out["symlink"] = (path, "zip")
    path = tmp_path / "entries.zip"
    path.write_bytes(zip_bytes([ZipMember(b"a")] * 1_000_000, count=1))
    out["million-entries"] = (path, "zip")
    return out


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc")
def test_hostile_headers_are_refused_in_bounded_memory(tmp_path: Path) -> None:
    """Each archive would take hundreds of MiB if its header were read before it was checked."""
    import subprocess
    import sys

    for kind, (path, fmt) in _huge_archives(tmp_path).items():
        proc = subprocess.run(
            [sys.executable, "-c", MEMORY_CHILD, str(path), fmt], capture_output=True, text=True, check=True
        )
        outcome, peak = proc.stdout.split("\n")[:2]
        assert outcome.startswith("refused"), (kind, outcome)
        assert int(outcome.split()[1]) < 600, (kind, "the message is short")
        assert int(peak) < 100, f"{kind}: peak RSS {peak} MiB"


def test_symlink_loops_inside_the_package_are_kept_not_an_exception(tmp_path: Path) -> None:
    # Found by scripts/fuzz (archive kind): Path.resolve raised RuntimeError on a loop. A loop
    # cannot lead outside; go-getter keeps it, and the layout leaves it out with a warning.
    data = tar_with(
        (info("main.tf"), b""),
        (info("d/self", tarfile.SYMTYPE, "self"), None),
        (info("d/a", tarfile.SYMTYPE, "b"), None),
        (info("d/b", tarfile.SYMTYPE, "a"), None),
    )
    dest = extract(tmp_path, data, "tar.gz")
    assert {p.name for p in (dest / "d").iterdir()} == {"self", "a", "b"}


@pytest.mark.parametrize("case", ["zip-unknown-method", "zip-encrypted", "xz-corrupt"])
def test_damaged_or_unsupported_archives_are_download_errors(tmp_path: Path, case: str) -> None:
    # Found by scripts/fuzz (archive kind): each raised past the handler, an internal error.
    if case.startswith("zip"):
        data = bytearray(make_zip({"main.tf": "x"}))
        central = data.find(b"PK\x01\x02")
        if case == "zip-unknown-method":
            data[central + 10 : central + 12] = (99).to_bytes(2, "little")
        else:
            data[central + 8] |= 1  # general-purpose flag bit 0: encrypted
        with pytest.raises(FetchError, match="error decompressing zip archive"):
            extract(tmp_path, bytes(data), "zip")
    else:
        import lzma
        import random

        content = random.Random(1).randbytes(200_000).hex()  # not compressible: the stream is long
        good = lzma.compress(make_tar({"main.tf": "", "data.txt": content}, mode="w"))
        middle = len(good) // 2
        broken = good[:middle] + bytes(b ^ 0xFF for b in good[middle : middle + 64]) + good[middle + 64 :]
        with pytest.raises(FetchError, match=r"error decompressing tar\.xz archive"):
            extract(tmp_path, broken, "tar.xz")


# -- through the gate (issue 38): every member written relative to the destination's descriptor --


def test_no_member_is_written_through_a_link_even_one_the_archive_made_inside(tmp_path: Path) -> None:
    # go-getter writes a tar's symlink as a plain file, so ``link/x`` fails in Terraform too.
    data = tar_with(
        (info("sub/keep.txt"), b"k"),
        (info("link", tarfile.SYMTYPE, "sub"), None),
        (info("link/x.txt"), b"through"),
    )
    with pytest.raises(FetchError) as exc:
        extract(tmp_path, data, "tar.gz")
    assert "'link/x.txt'" in str(exc.value) and "symbolic link 'link'" in str(exc.value)
    assert sorted(p.name for p in (tmp_path / "box" / "dest" / "sub").iterdir()) == ["keep.txt"]


def test_a_link_already_in_the_destination_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "box" / "dest"
    dest.mkdir(parents=True)
    (dest / "modules").symlink_to(outside)
    (tmp_path / "a.tar.gz").write_bytes(make_tar({"modules/main.tf": "x"}))
    with pytest.raises(FetchError, match=r"through (a|the symbolic) link"):
        extract_archive(tmp_path / "a.tar.gz", "tar.gz", dest, limits=LIMITS)
    assert list(outside.iterdir()) == []


def test_a_later_member_of_the_same_name_replaces_an_earlier_file_or_link(tmp_path: Path) -> None:
    # Was "error decompressing tar.gz archive: [Errno 17] File exists" for the second link.
    data = tar_with(
        (info("a.txt"), b"a"),
        (info("l", tarfile.SYMTYPE, "a.txt"), None),
        (info("l", tarfile.SYMTYPE, "b.txt"), None),
        (info("b.txt"), b"first"),
        (info("b.txt"), b"second"),
    )
    dest = extract(tmp_path, data, "tar.gz")
    assert (dest / "l").readlink() == Path("b.txt") and (dest / "b.txt").read_bytes() == b"second"


@pytest.mark.parametrize(
    ("members", "words"),
    [
        (((info("a"), b"file"), (info("a/b.txt"), b"x")), "inside 'a', which is not a directory"),
        (((info("d/f.txt"), b"x"), (info("d", tarfile.SYMTYPE, "f.txt"), None)), "replaces a directory"),
        (((info("d/f.txt"), b"x"), (info("d"), b"x")), "replaces a directory"),
    ],
    ids=["file-then-below-it", "directory-then-link", "directory-then-file"],
)
def test_members_in_each_others_way_are_refused_in_words(
    tmp_path: Path, members: tuple[tuple[tarfile.TarInfo, bytes | None], ...], words: str
) -> None:
    with pytest.raises(FetchError) as exc:
        extract(tmp_path, tar_with(*members), "tar.gz")
    assert words in str(exc.value) and "[Errno" not in str(exc.value)


def test_an_archive_that_is_a_fifo_or_a_device_is_refused_unread(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "pipe.tar.gz"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.zip"
    zero.symlink_to("/dev/zero")
    errors: list[BaseException] = []

    def run() -> None:
        for path, fmt in ((fifo, "tar.gz"), (zero, "zip")):
            try:
                extract_archive(path, fmt, tmp_path / "dest", limits=LIMITS)
            except BaseException as exc:
                errors.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "extracting a FIFO blocked (it did, before the gate)"
    assert [type(e) for e in errors] == [FetchError, FetchError]
    assert "FIFO" in str(errors[0]) and "character device" in str(errors[1])
    assert all("[Errno" not in str(e) for e in errors)


def test_extraction_stops_at_the_deadline(tmp_path: Path) -> None:
    import time

    (tmp_path / "a.tar.gz").write_bytes(make_tar({f"f{i}.tf": "x" for i in range(20)}))
    with pytest.raises(FetchError, match="time limit"):
        extract_archive(
            tmp_path / "a.tar.gz", "tar.gz", tmp_path / "dest", limits=LIMITS, deadline=time.monotonic() - 1
        )


def test_a_name_too_long_for_the_file_system_is_a_short_sentence(tmp_path: Path) -> None:
    # Found by scripts/fuzz (archive kind, seed 38): a 4,000-byte component is ENAMETOOLONG, and the
    # message quoted the whole path (4,208 characters; before the gate, with "[Errno 36]").
    with pytest.raises(FetchError) as exc:
        extract(tmp_path, tar_with((info("d/" + "n" * 4000), b"x")), "tar.gz")
    text = str(exc.value)
    assert "too long" in text and len(text) < 600 and "[Errno" not in text
