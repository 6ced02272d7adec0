"""``npseq data fetch``: download, SHA-1 check, unpacking into the cache, ``--from FILE``, ``--data NAME``.

Never the network: a local HTTP server in a thread serves a small ``fra-eng.zip`` built in
the test's folder, the registry entry is pointed at that zip's SHA-1, and ``$NPSEQ_DATA``
at a folder of the test's own.
"""
import argparse
import dataclasses
import functools
import hashlib
import http.server
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile

import pytest
from data_cache import cache_files

from npseq.cli import main
from npseq.commands.train import data_file
from npseq.data import datasets
from npseq.errors import InvalidValueError, LimitError

# Sixty distinct pairs, d2l's format (English<TAB>French<TAB>attribution), enough for one batch of 50.
LINES = [f"go {i} .\tva {i} !\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i}" for i in range(60)]
TEXT = "\n".join(LINES) + "\n"


def make_zip(path, member="fra-eng/fra.txt", text=TEXT):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, text)
        archive.writestr("fra-eng/_about.txt", "Tatoeba sentence pairs, for a test\n")
    return path


def sha1(path):
    return hashlib.sha1(path.read_bytes()).hexdigest()




@pytest.fixture
def served(tmp_path):
    """A zip served over HTTP on localhost: ``(url of the zip, its path)``."""
    folder = tmp_path / "server"
    folder.mkdir()
    archive = make_zip(folder / "fra-eng.zip")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/fra-eng.zip", archive
    finally:
        server.shutdown()
        server.server_close()


def expect_sha1(monkeypatch, digest):
    """Point the registry's fra-eng entry at ``digest`` (the test zip's SHA-1, or a wrong one)."""
    entry = dataclasses.replace(datasets.DATASETS["fra-eng"], sha1=digest)
    monkeypatch.setitem(datasets.DATASETS, "fra-eng", entry)


def one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


# -------------------------------------------------------------------- download
def test_a_download_whose_sha1_matches_is_unpacked_into_the_cache(home, served, monkeypatch, capsys):
    url, archive = served
    expect_sha1(monkeypatch, sha1(archive))
    assert main(["data", "fetch", "fra-eng", "--url", url, "--no-progress"]) == 0
    assert (home / "fra-eng" / "fra.txt").read_text(encoding="utf-8") == TEXT
    # The whole folder of the zip is kept (its _about.txt too), and no scratch file is left beside it.
    assert cache_files(home) == ["fra-eng", "fra-eng/_about.txt", "fra-eng/fra.txt"]
    out = capsys.readouterr().out
    assert f"downloading {url}" in out and str(home / "fra-eng" / "fra.txt") in out
    assert "npseq train --data fra-eng" in out
    assert datasets.dataset_path("fra-eng") == home / "fra-eng" / "fra.txt"


def test_a_download_whose_sha1_differs_is_refused_and_nothing_is_kept(home, served, monkeypatch, capsys):
    url, archive = served
    expect_sha1(monkeypatch, "0" * 40)
    assert main(["data", "fetch", "fra-eng", "--url", url, "--no-progress"]) == 2
    err = one_line_error(capsys)
    assert f"has SHA-1 {sha1(archive)}" in err and "0" * 40 in err and url in err and "--from FILE" in err
    assert cache_files(home) == []


def test_a_dataset_in_the_cache_is_not_downloaded_again_unless_forced(home, served, monkeypatch, capsys):
    url, archive = served
    expect_sha1(monkeypatch, sha1(archive))
    assert main(["data", "fetch", "fra-eng", "--url", url, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["data", "fetch", "fra-eng", "--url", "http://127.0.0.1:1/never-asked", "--no-progress"]) == 0
    assert "already in the cache" in capsys.readouterr().out
    (home / "fra-eng" / "fra.txt").write_text("stale\tcopy\n", encoding="utf-8")
    assert main(["data", "fetch", "fra-eng", "--url", url, "--force", "--no-progress"]) == 0
    assert (home / "fra-eng" / "fra.txt").read_text(encoding="utf-8") == TEXT
    assert cache_files(home) == ["fra-eng", "fra-eng/_about.txt", "fra-eng/fra.txt"]


def closed_port_url():
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/fra-eng.zip"


def test_offline_the_command_names_the_url_and_from_file_in_one_line(home, capsys):
    url = closed_port_url()
    assert main(["data", "fetch", "fra-eng", "--url", url, "--no-progress"]) == 2
    err = one_line_error(capsys)
    assert err.startswith("npseq data: cannot download ") and url in err
    assert "npseq data fetch fra-eng --from FILE" in err
    assert cache_files(home) == []


def test_an_http_error_is_one_line_too(home, served, capsys):
    url, _ = served
    missing = url.replace("fra-eng.zip", "elsewhere.zip")
    assert main(["data", "fetch", "fra-eng", "--url", missing, "--no-progress"]) == 2
    err = one_line_error(capsys)
    assert missing in err and "HTTP 404" in err and "--from FILE" in err
    assert cache_files(home) == []


def test_the_default_url_is_d2ls_fra_eng_zip(home, monkeypatch):
    # The registry entry is d2l's DATA_HUB['fra-eng']; nothing is fetched here.
    asked = []
    monkeypatch.setattr(datasets, "_download", lambda url, *args: asked.append(url) or "0" * 40)
    with pytest.raises(datasets.ChecksumMismatch):
        datasets.fetch_dataset("fra-eng", progress=False)
    assert asked == ["http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip"]
    assert datasets.DATASETS["fra-eng"].sha1 == "94646ad1522d915e7b0f9296181140edcf86a4f5"


# --------------------------------------------------------- nothing half-done
def test_a_zip_with_the_right_hash_but_no_corpus_or_no_zip_at_all_leaves_nothing(home, tmp_path, monkeypatch):
    wrong_member = make_zip(tmp_path / "other.zip", member="eng-deu/deu.txt")
    expect_sha1(monkeypatch, sha1(wrong_member))
    with pytest.raises(datasets.FetchError, match="holds no fra-eng/fra.txt; nothing was kept"):
        datasets.fetch_dataset("fra-eng", source=wrong_member)
    assert cache_files(home) == []

    not_a_zip = tmp_path / "fra-eng.zip"
    not_a_zip.write_bytes(b"<html>a captive portal's login page</html>")

    def portal(url, path, *args):  # what a captive portal answers instead of the file
        path.write_bytes(not_a_zip.read_bytes())
        return sha1(not_a_zip)
    monkeypatch.setattr(datasets, "_download", portal)
    expect_sha1(monkeypatch, sha1(not_a_zip))
    with pytest.raises(datasets.FetchError, match="is not a readable zip archive"):
        datasets.fetch_dataset("fra-eng", url="http://mirror.invalid/fra-eng.zip", progress=False)
    assert cache_files(home) == []


def test_ctrl_c_while_unpacking_keeps_the_dataset_that_was_there(home, served, monkeypatch):
    url, archive = served
    expect_sha1(monkeypatch, sha1(archive))
    datasets.fetch_dataset("fra-eng", url=url, progress=False)
    before = cache_files(home)

    def interrupted(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(datasets, "_unpack", interrupted)
    with pytest.raises(KeyboardInterrupt):
        datasets.fetch_dataset("fra-eng", url=url, progress=False, force=True)
    assert cache_files(home) == before
    assert (home / "fra-eng" / "fra.txt").read_text(encoding="utf-8") == TEXT


class Trickle(http.server.BaseHTTPRequestHandler):
    """Promises a megabyte and sends it slowly: a download that is still running when Ctrl-C comes."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(10 ** 6))
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b"x" * 1000)
                self.wfile.flush()
                time.sleep(0.01)
        except OSError:  # the client went away, as it should
            pass

    def log_message(self, *args):
        pass


@pytest.mark.slow
def test_ctrl_c_during_a_download_exits_130_and_leaves_the_cache_empty(home):
    # A child process (it inherits NPSEQ_DATA), so that the SIGINT reaches the command and not pytest.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/fra-eng.zip"
    try:
        process = subprocess.Popen([sys.executable, "-m", "npseq", "data", "fetch", "fra-eng", "--url", url,
                                    "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not list(home.glob(".fra-eng-*/download.zip")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(home.glob(".fra-eng-*/download.zip")), "the download never started"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    assert process.returncode == 130 and "npseq data: interrupted" in err and "Traceback" not in err
    assert cache_files(home) == []


def test_an_oversized_download_is_cut_off(home, served, monkeypatch):
    url, archive = served
    monkeypatch.setattr(datasets, "MAX_DOWNLOAD_BYTES", 100)
    with pytest.raises(LimitError, match="more than"):
        datasets.fetch_dataset("fra-eng", url=url, progress=False)
    assert cache_files(home) == []


# ----------------------------------------------------------------- --from FILE
def test_from_the_zip_checks_its_hash(home, served, monkeypatch, capsys):
    _, archive = served
    expect_sha1(monkeypatch, "f" * 40)
    assert main(["data", "fetch", "fra-eng", "--from", str(archive)]) == 2
    err = one_line_error(capsys)
    assert f"source {archive} has SHA-1 {sha1(archive)}" in err and "--from fra.txt" in err
    assert cache_files(home) == []
    expect_sha1(monkeypatch, sha1(archive))
    assert main(["data", "fetch", "fra-eng", "--from", str(archive)]) == 0
    assert (home / "fra-eng" / "fra.txt").read_text(encoding="utf-8") == TEXT
    assert "unchecked" not in capsys.readouterr().err


def test_from_the_text_file_registers_it_unchecked_and_says_so(home, tmp_path, capsys):
    text = tmp_path / "fra.txt"
    text.write_text(TEXT, encoding="utf-8")
    assert main(["data", "fetch", "fra-eng", "--from", str(text)]) == 0
    assert (home / "fra-eng" / "fra.txt").read_text(encoding="utf-8") == TEXT
    assert cache_files(home) == ["fra-eng", "fra-eng/fra.txt"]
    captured = capsys.readouterr()
    assert "no published SHA-1" in captured.err and "registered unchecked" in captured.err
    # Registering again replaces the copy, and the cached file may be its own source.
    assert main(["data", "fetch", "fra-eng", "--from", str(home / "fra-eng" / "fra.txt")]) == 0
    assert (home / "fra-eng" / "fra.txt").read_text(encoding="utf-8") == TEXT


@pytest.mark.parametrize("content, reason", [
    (b"just some prose, no tab\nat all\n", "its first line has no tab"),
    (b"\xff\xfe\x00binary\tdata", "nor UTF-8 text"),
])
def test_from_a_file_that_is_no_corpus_is_refused(home, tmp_path, capsys, content, reason):
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    assert main(["data", "fetch", "fra-eng", "--from", str(path)]) == 2
    assert reason in one_line_error(capsys)
    assert cache_files(home) == []


def test_from_and_url_exclude_each_other_and_from_must_exist(home, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["data", "fetch", "fra-eng", "--from", str(tmp_path / "missing.zip")])
    assert exit_info.value.code == 2 and "no such file" in capsys.readouterr().err
    with pytest.raises(InvalidValueError, match="url, source: expected at most one"):
        datasets.fetch_dataset("fra-eng", url="http://x/", source=__file__)
    with pytest.raises(InvalidValueError, match="url: expected an http\\(s\\) URL, got 'fra-eng.zip'"):
        datasets.fetch_dataset("fra-eng", url="fra-eng.zip", progress=False)
    with pytest.raises(InvalidValueError, match="name: expected a dataset name, one of fra-eng"):
        datasets.fetch_dataset("deu-eng")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "data:,hello", "ftp://example.org/fra-eng.zip"])
def test_a_url_that_is_not_http_is_one_line_and_nothing_is_kept(home, capsys, url):
    # urllib opens file: and data: URLs too, and their answers lack what an HTTP response has: a traceback
    assert main(["data", "fetch", "fra-eng", "--url", url, "--deadline", "3", "--no-progress"]) == 2
    assert f"url: expected an http(s) URL, got {url!r}" in one_line_error(capsys)
    assert cache_files(home) == []


# ------------------------------------------------------------- finding it again
def test_train_finds_the_dataset_by_name_after_from_file(home, tmp_path, capsys):
    text = tmp_path / "fra.txt"
    text.write_text(TEXT, encoding="utf-8")
    small = ["--epochs", "1", "--num-examples", "50", "--no-progress", "--embed-size", "8", "--num-hiddens", "8",
             "--num-layers", "1"]
    with pytest.raises(SystemExit) as exit_info:  # not fetched yet: argparse's one line, exit 2
        main(["train", "--data", "fra-eng", *small])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "npseq data fetch fra-eng" in err and "--from FILE" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["data", "fetch", "fra-eng", "--from", str(text)]) == 0
    capsys.readouterr()
    assert main(["train", "--data", "fra-eng", *small]) == 0
    out = capsys.readouterr().out
    assert f"on {home / 'fra-eng' / 'fra.txt'}: 45 pairs (5 more held out to test on)" in out  # 10% held out


def test_data_file_prefers_a_file_then_a_name(home, tmp_path, monkeypatch):
    with pytest.raises(argparse.ArgumentTypeError, match=r"no such file: nothing \(nor a dataset name: fra-eng\)"):
        data_file("nothing")
    with pytest.raises(argparse.ArgumentTypeError, match="is not in the cache"):
        data_file("fra-eng")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fra-eng").write_text(TEXT, encoding="utf-8")
    assert data_file("fra-eng") == "fra-eng"  # a file of that name wins


def test_find_dataset_reads_the_environment_variable_then_the_cache(home, tmp_path, monkeypatch):
    assert datasets.find_dataset("fra-eng") is None
    hint = datasets.how_to_get("fra-eng")
    assert "npseq data fetch fra-eng" in hint and "NPSEQ_FRA" in hint
    with pytest.raises(datasets.DatasetMissing, match=f"not in the cache {home}: get it with"):
        datasets.dataset_path("fra-eng")
    own = tmp_path / "own.txt"
    own.write_text(TEXT, encoding="utf-8")
    datasets.fetch_dataset("fra-eng", source=own)
    assert datasets.find_dataset("fra-eng") == home / "fra-eng" / "fra.txt"
    monkeypatch.setenv("NPSEQ_FRA", str(own))
    assert datasets.find_dataset("fra-eng") == own
    monkeypatch.setenv("NPSEQ_FRA", str(tmp_path / "missing.txt"))
    assert datasets.find_dataset("fra-eng") is None  # the variable is obeyed, not second-guessed


def test_data_home_defaults_to_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("NPSEQ_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert datasets.data_home() == tmp_path / ".cache" / "npseq"


def test_corpus_file_takes_data_then_the_environment_then_the_cache(tmp_path, monkeypatch):
    from npseq.data.datasets import DatasetMissing, corpus_file
    monkeypatch.setenv("NPSEQ_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv("NPSEQ_FRA", raising=False)
    with pytest.raises(DatasetMissing, match="no fra-eng corpus: get it with `npseq data fetch fra-eng`.*--data PATH"):
        corpus_file()
    with pytest.raises(DatasetMissing, match="--data: no such file: missing.txt"):
        corpus_file("missing.txt")
    given = tmp_path / "pairs.txt"
    given.write_text("go .\tva !\n", encoding="utf-8")
    assert corpus_file(str(given)) == str(given)
    monkeypatch.setenv("NPSEQ_FRA", str(given))
    assert corpus_file() == str(given)
