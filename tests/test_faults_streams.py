"""Faults of streams: standard input that never ends or holds one enormous line, text that a strict ASCII stream
cannot carry, a reader that goes away, a download server that trickles (its body, its headers or its TLS
handshake), and a fetch killed at its worst moment.

As in tests/test_faults.py, a child process is never given a fixed time: a test waits for a line it prints, for a
file it writes, or for it to end; a command that could run forever is bounded by a memory limit or a deadline of
its own, so that old code fails instead of hanging the suite.
"""
import contextlib
import dataclasses
import hashlib
import http.server
import os
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from data_cache import cache_files

import npseq.decode
import npseq.errors
import npseq.train
from npseq import backend
from npseq.cli import main
from npseq.commands import translate as translate_command
from npseq.data import datasets
from npseq.errors import InvalidValueError
from npseq.models.build import DEMO_SETTINGS, build_seq2seq

MEMORY_LIMIT = 768 * 2 ** 20  # the address space of a child, as in tests/test_faults.py
LIMITED = ("import resource, sys\n"
           f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
           "from npseq.cli import main\n"
           "sys.exit(main(sys.argv[1:]))\n")
QUIET_BLAS = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def limited_translate(checkpoint, *args):
    """``npseq translate CHECKPOINT ARGS`` in a child under the memory limit, stdin and stdout pipes."""
    return subprocess.Popen([sys.executable, "-c", LIMITED, "translate", str(checkpoint), *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=QUIET_BLAS)


def feed_forever(stream, line: bytes):
    """``yes LINE`` into ``stream`` from a thread, until the reader goes away (a broken pipe ends it)."""
    def write():
        block = line * (2 ** 16 // len(line))
        try:
            while True:
                stream.write(block)
        except (BrokenPipeError, OSError, ValueError):
            pass
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


# ------------------------------------------------------------------ translate reads stdin as a stream
def test_translate_answers_each_line_of_an_endless_stdin_as_it_comes(checkpoint):
    # `yes 'two hundred' | npseq translate ck.npz | head -1`: the first line is translated and printed while
    # stdin is still flowing; the reader going away then ends the command quietly (141, as the runner says).
    process = limited_translate(checkpoint)
    writer = feed_forever(process.stdin, b"two hundred\n")
    first = process.stdout.readline()
    process.stdout.close()
    err = process.stderr.read()
    code = process.wait(timeout=300)
    writer.join(timeout=300)
    assert first.startswith(b"two hundred => "), (first, err)
    assert code == 141 and err == b"", err


def test_a_line_longer_than_the_cap_is_one_line_naming_the_cap(checkpoint):
    cap = translate_command.MAX_LINE_CHARS
    process = limited_translate(checkpoint)
    out, err = process.communicate(b"two hundred\n" + b"one " * (cap // 2) + b"\nthree\n", timeout=300)
    err = err.decode()
    assert process.returncode == 2, err
    assert out.decode().startswith("two hundred => ")  # the line before it was translated and printed first
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "MemoryError" not in err, err
    assert lines[0].startswith("npseq translate: ") and "line 2" in lines[0] and f"{cap}" in lines[0], err


def test_an_endless_line_is_refused_at_the_cap_not_read_to_the_end(checkpoint):
    # 'yes' without a newline: one line that never ends; the old code read it until memory ran out
    process = limited_translate(checkpoint)
    writer = feed_forever(process.stdin, b"one two three ")
    err = process.stderr.read().decode()
    code = process.wait(timeout=300)
    process.stdout.close()
    writer.join(timeout=300)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{translate_command.MAX_LINE_CHARS}" in err and "out of memory" not in err, err


def test_a_sentence_argument_longer_than_the_cap_is_refused_too(checkpoint, capsys):
    code = main(["translate", str(checkpoint), "one " * translate_command.MAX_LINE_CHARS])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "sentence 1" in err and f"{translate_command.MAX_LINE_CHARS}" in err


def test_an_empty_sentence_argument_is_refused_before_any_output(checkpoint, capsys):
    code = main(["translate", str(checkpoint), "one two", " "])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err == "npseq translate: sentence 2: expected words to translate, got ' '\n"


def test_the_unknown_word_report_is_bounded(checkpoint, capsys):
    # Thousands of distinct unknown words in one sentence: the report names a few and counts the rest, and quotes
    # the sentence shortened, instead of a line of several times the sentence's size.
    words = " ".join(f"w{i}" for i in range(5000))
    assert main(["translate", str(checkpoint), f"two {words}"]) == 0
    out, err = capsys.readouterr()
    report, = err.splitlines()
    shown = translate_command.MAX_UNKNOWN_SHOWN
    assert f"'w{shown - 1}'" in report and f"'w{shown}'" not in report, report
    assert f"and {5000 - shown} more" in report and len(report) < 2000, report
    assert out.startswith("two w0 w1")  # the translation's own line still echoes the sentence as given


def test_strict_on_stdin_refuses_the_first_line_with_unknown_words(checkpoint):
    process = limited_translate(checkpoint, "--strict")
    out, err = process.communicate(b"two hundred\nfive zebras\nthree\n", timeout=300)
    assert process.returncode == 2 and out.decode().splitlines()[0].startswith("two hundred => "), err
    assert out.count(b" => ") == 1 and b"'zebras'" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_one_line_on_stdin_draws_one_picture_under_its_own_name(checkpoint, tmp_path):
    picture = tmp_path / "attention.png"
    process = limited_translate(checkpoint, "--attention-png", picture)
    out, err = process.communicate(b"two hundred\n", timeout=300)
    assert process.returncode == 0, err
    assert picture.read_bytes()[:8] == translate_command.PNG_MAGIC and not (tmp_path / "attention-1.png").exists()
    several = tmp_path / "several.png"
    process = limited_translate(checkpoint, "--attention-png", several)
    out, err = process.communicate(b"two\n\nthree\n", timeout=300)
    assert process.returncode == 0 and out.count(b" => ") == 2, err
    assert (tmp_path / "several-1.png").exists() and (tmp_path / "several-2.png").exists()


# ------------------------------------------------------------------ translate: the lines waiting, together
def test_stdin_comes_in_lists_of_the_lines_already_waiting():
    read, write = os.pipe()
    with open(read, encoding="utf-8") as stream:
        os.write(write, b"one\ntwo\nthree\n")  # waiting before the first list is asked for
        batches = translate_command.stdin_batches(stream, most=2)
        assert next(batches) == ["one", "two"] and next(batches) == ["three"]
        os.write(write, b"four\r\n")  # a line typed alone comes alone, at once
        assert next(batches) == ["four"]
        os.write(write, b"fi")  # a line in two pieces is one line
        os.write(write, b"ve\n")
        assert next(batches) == ["five"]
        os.write(write, b"six")  # the last line, without its end
        os.close(write)
        assert next(batches) == ["six"]
        assert next(batches, None) is None


def test_the_lines_before_a_line_past_the_cap_come_out_first():
    import io
    cap = translate_command.MAX_LINE_CHARS
    batches = translate_command.stdin_batches(io.StringIO("one\ntwo\n" + "x" * (cap + 1) + "\nthree\n"), most=8)
    assert next(batches) == ["one", "two"]
    with pytest.raises(npseq.errors.LimitError, match="line 3 of stdin"):
        next(batches)


@pytest.mark.slow
def test_translate_decodes_the_waiting_lines_together_with_the_same_output(checkpoint, tmp_path, monkeypatch,
                                                                            capsys):
    from npseq.checkpoint import load_checkpoint, seq2seq_from_checkpoint
    from npseq.data.tasks import english_number
    from npseq.runs import saved_training_run
    rng = np.random.default_rng(0)
    sentences = [english_number(int(n)) for n in rng.integers(0, 10_000, 300)]
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join(sentences) + "\n")
    saved = load_checkpoint(checkpoint)
    model = seq2seq_from_checkpoint(saved)
    src_max_len, max_len = saved_training_run(saved)["num_steps"]
    search = npseq.decode.beam_search_batch
    batch_rows = []

    def counting(model, src, *args, **kwargs):
        batch_rows.append(src.shape[0] * kwargs["beam_size"])
        return search(model, src, *args, **kwargs)

    for beam, rows in [(1, [256, 44]), (3, [85 * 3, 85 * 3, 85 * 3, 45 * 3])]:
        batch_rows.clear()
        monkeypatch.setattr(npseq.decode, "beam_search_batch", counting)
        with lines.open() as stdin:
            monkeypatch.setattr(sys, "stdin", stdin)
            assert main(["translate", str(checkpoint), "--beam", str(beam)]) == 0
        out = capsys.readouterr().out.splitlines()
        monkeypatch.setattr(npseq.decode, "beam_search_batch", search)
        assert batch_rows == rows  # the waiting lines, BATCH_ROWS decoder rows at a time
        options = dict(method="beam", beam_size=beam, alpha=0.75) if beam > 1 else {}
        alone = [npseq.decode.translate(model, sentence, saved.vocabs["src"], saved.vocabs["tgt"], max_len,
                                        task="numbers", src_max_len=src_max_len, **options).text
                 for sentence in sentences]
        assert out == [f"{sentence} => {text}" for sentence, text in zip(sentences, alone)]


@pytest.mark.parametrize("stdin, args, words", [
    ("one \u00e9\n".encode(), [], "can't decode byte 0xc3"),  # UTF-8 in, where the stream says ASCII
    (b"", ["one \u00e9"], "can't encode character '\\xe9'"),  # the sentence echoed back out
])
def test_text_a_strict_ascii_stream_cannot_carry_is_one_line(checkpoint, stdin, args, words):
    env = dict(QUIET_BLAS, PYTHONIOENCODING="ascii:strict")
    process = subprocess.run([sys.executable, "-m", "npseq", "translate", str(checkpoint), *args], input=stdin,
                             capture_output=True, env=env, timeout=300)
    err = process.stderr.decode("ascii", "backslashreplace")
    last = err.strip().splitlines()[-1]
    assert process.returncode == 2 and "Traceback" not in err, err
    assert last.startswith("npseq translate: text this command cannot read or write in its encoding (") and \
        words in last and last.endswith("use UTF-8 (PYTHONIOENCODING=utf-8)"), err


# ------------------------------------------------------------------ data fetch: deadline, killed fetches
FRA_LINES = "".join(f"go {i} .\tva {i} !\tCC-BY 2.0 (France) Attribution: tatoeba.org #{i}\n" for i in range(60))


def make_zip(path, text=FRA_LINES):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("fra-eng/fra.txt", text)
    return path




@pytest.fixture
def archive(tmp_path, monkeypatch):
    """A small fra-eng.zip, which the registry entry is pointed at (its SHA-1)."""
    path = make_zip(tmp_path / "fra-eng.zip")
    entry = dataclasses.replace(datasets.DATASETS["fra-eng"], sha1=hashlib.sha1(path.read_bytes()).hexdigest())
    monkeypatch.setitem(datasets.DATASETS, "fra-eng", entry)
    return path


LOCALHOST_PEM = Path(__file__).parent / "data" / "localhost.pem"
"""A self-signed key and certificate for 127.0.0.1 (valid to 2126), for the HTTPS servers of tests."""


@contextlib.contextmanager
def http_server(handler, tls=False):
    """``handler`` served on 127.0.0.1 in a thread, over TLS with :data:`LOCALHOST_PEM` when ``tls``: yields
    ``(url, stop)``; ``stop`` is set when the test ends."""
    stop = threading.Event()
    handler = type(handler.__name__, (handler,), {"stop": stop, "log_message": lambda self, *args: None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(LOCALHOST_PEM)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}/fra-eng.zip", stop
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


class OneByteEveryTwoSeconds(http.server.BaseHTTPRequestHandler):
    """Promises a megabyte and sends a byte every two seconds: never silent for the 60 s timeout, never done."""
    stop: threading.Event

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(10 ** 6))
        self.end_headers()
        try:
            for _ in range(300):  # bounded: ten minutes at most, if the client never gives up
                self.wfile.write(b"x")
                self.wfile.flush()
                if self.stop.wait(2):
                    return
        except OSError:  # the client went away, as it should
            pass


class HeadersEveryTwoSeconds(http.server.BaseHTTPRequestHandler):
    """Answers with a header line every two seconds, never reaching the body."""
    stop: threading.Event

    def do_GET(self):
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            for i in range(300):
                self.wfile.write(f"X-Slow-{i % 50}: {i}\r\n".encode())
                self.wfile.flush()
                if self.stop.wait(2):
                    return
        except OSError:
            pass


@pytest.mark.slow
@pytest.mark.parametrize("handler", [OneByteEveryTwoSeconds, HeadersEveryTwoSeconds])
def test_a_trickling_server_is_given_up_at_the_deadline(home, archive, capsys, handler):
    with http_server(handler) as (url, _):
        code = main(["data", "fetch", "fra-eng", "--url", url, "--deadline", "0.5", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("npseq data: --deadline: expected ") and url in err and "0.5 s" in err, err
    assert cache_files(home) == []


def test_the_deadline_has_a_documented_default_and_a_cap(home, capsys):
    assert datasets.DEADLINE_S == 3600 and "DEADLINE_S" in datasets.__all__
    with pytest.raises(SystemExit) as exit_info:
        main(["data", "fetch", "fra-eng", "--deadline", "0"])
    assert exit_info.value.code == 2 and "argument --deadline: expected a positive float" in capsys.readouterr().err
    with pytest.raises(InvalidValueError, match="deadline: expected seconds"):
        datasets.fetch_dataset("fra-eng", url="http://127.0.0.1:1/", deadline=10 ** 9)


def test_a_fetch_within_its_deadline_is_unchanged(home, archive):
    class Served(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(archive.parent), **kwargs)
    with http_server(Served) as (url, _):
        assert datasets.fetch_dataset("fra-eng", url=url, progress=False, deadline=300) == home / "fra-eng/fra.txt"
    assert cache_files(home) == ["fra-eng", "fra-eng/fra.txt"]


@pytest.fixture
def trusting_localhost(monkeypatch):
    """HTTPS clients of this process trust :data:`LOCALHOST_PEM` (and nothing else)."""
    monkeypatch.setattr(ssl, "_create_default_https_context", lambda: ssl.create_default_context(cafile=LOCALHOST_PEM))


class HandshakeByteByByte(socketserver.BaseRequestHandler):
    """Answers a TLS client hello with a record header announcing 16 KiB, then one byte of it every quarter second:
    never silent for the socket's timeout, and the handshake never done (a minute at most, if nobody gives up)."""
    stop: threading.Event

    def handle(self):
        try:
            self.request.sendall(bytes([22, 3, 3, 0x40, 0]))  # a handshake record of 2**14 bytes
            for _ in range(240):
                self.request.sendall(b"\x02")
                if self.stop.wait(0.25):
                    return
        except OSError:  # the client went away, as it should
            pass


@pytest.mark.slow
@pytest.mark.parametrize("timer", ["on time", "late"])
def test_a_tls_handshake_that_never_ends_is_given_up_at_the_deadline(home, archive, capsys, monkeypatch, timer):
    if timer == "late":  # a busy machine: the socket's timeout, as long as the deadline, ends the handshake first
        monkeypatch.setattr(datasets._Deadline, "_expire", lambda self: None)
    stop = threading.Event()
    handler = type("Handshake", (HandshakeByteByByte,), {"stop": stop})
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"https://127.0.0.1:{server.server_address[1]}/fra-eng.zip"
        try:
            code = main(["data", "fetch", "fra-eng", "--url", url, "--deadline", "2", "--no-progress"])
        finally:
            stop.set()
            server.shutdown()
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("npseq data: --deadline: expected ") and url in err and "2 s, got 0 bytes" in err, err
    assert cache_files(home) == []


def test_a_fetch_over_tls_is_unchanged(home, archive, trusting_localhost):
    class Served(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(archive.parent), **kwargs)
    with http_server(Served, tls=True) as (url, _):
        assert datasets.fetch_dataset("fra-eng", url=url, progress=False, deadline=300) == home / "fra-eng/fra.txt"
    assert cache_files(home) == ["fra-eng", "fra-eng/fra.txt"]


FETCH_THEN_HANG = """
import os, sys
import npseq.data.datasets as datasets
entry = datasets.DATASETS["fra-eng"]
datasets.DATASETS["fra-eng"] = type(entry)(**{**entry.__dict__, "sha1": sys.argv[2]})
real_replace, real_download = os.replace, datasets._download
def hang(what):
    print(what, flush=True)
    sys.stdin.read()  # killed here
def download(url, path, *args):
    if sys.argv[1] == "download":
        path.write_bytes(b"x" * 2 ** 20)  # a partial copy
        hang("inside the download")
    return real_download(url, path, *args)
def replace(source, target):
    real_replace(source, target)
    if sys.argv[1] == "replace" and os.path.basename(target) == "replaced":
        hang("between the renames")  # the old copy moved aside, the new one not yet in place
datasets._download, os.replace = download, replace
if sys.argv[1] == "download":  # a download (the patched one above), from a URL nobody is asked
    datasets.fetch_dataset("fra-eng", url="http://127.0.0.1:1/fra-eng.zip", force=True, progress=False)
else:  # a replacement of the dataset in the cache by the zip
    datasets.fetch_dataset("fra-eng", source=sys.argv[3])
"""


def killed_fetch(where, archive):
    """A fetch of ``archive`` in a child, SIGKILLed ``where`` ("download" or "replace") once it says it is there;
    returns the child's process id."""
    digest = hashlib.sha1(archive.read_bytes()).hexdigest()
    process = subprocess.Popen([sys.executable, "-c", FETCH_THEN_HANG, where, digest, str(archive)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    said = process.stdout.readline()
    process.kill()
    process.wait(timeout=300)
    assert said == {"download": "inside the download\n", "replace": "between the renames\n"}[where], said
    return process.pid


def test_a_killed_download_leaves_a_scratch_that_the_next_fetch_removes(home, archive):
    pid = killed_fetch("download", archive)
    left = [name for name in cache_files(home) if name.endswith("download.zip")]
    assert len(left) == 1 and f"-{pid}-" in left[0]  # the killed fetch's partial copy, named by its pid
    assert main(["data", "fetch", "fra-eng", "--from", str(archive)]) == 0
    assert cache_files(home) == ["fra-eng", "fra-eng/fra.txt"]


def test_a_replacement_killed_between_its_renames_gets_the_old_copy_back(home, archive):
    datasets.fetch_dataset("fra-eng", source=archive)
    (home / "fra-eng" / "fra.txt").write_text("the old copy\tl'ancienne\n", encoding="utf-8")
    killed_fetch("replace", archive)
    assert not (home / "fra-eng").exists()  # the crash window: the dataset is aside, under the scratch folder
    # The next lookup (train --data fra-eng) finds it again: the old copy is put back, the scratch removed.
    assert datasets.dataset_path("fra-eng").read_text(encoding="utf-8") == "the old copy\tl'ancienne\n"
    assert cache_files(home) == ["fra-eng", "fra-eng/fra.txt"]


def test_a_running_fetchs_scratch_is_left_alone_and_an_old_one_is_not(home, monkeypatch):
    home.mkdir()
    mine = home / f"{datasets._scratch_prefix('fra-eng')}abc123"  # this process: alive
    mine.mkdir()
    other_host = home / f".fra-eng-elsewhere-{os.getpid() + 1}-abc123"  # another host's: only age tells
    other_host.mkdir()
    datasets.tidy_cache("fra-eng")
    assert mine.is_dir() and other_host.is_dir()
    old = time.time() - datasets.STALE_SCRATCH_S - 60
    for path in (mine, other_host):
        os.utime(path, (old, old))
    datasets.tidy_cache("fra-eng")
    assert cache_files(home) == []


# ------------------------------------------------------------------ BLAS threads chosen for the work
class Sized:
    """A stand-in model whose largest weight matrix is ``rows x cols``."""

    def __init__(self, rows, cols):
        self.weights = np.zeros((rows, cols), dtype=np.float32)

    def parameters(self):
        return [self.weights, np.zeros(self.weights.shape[1], dtype=np.float32)]  # a bias is no matrix


@pytest.fixture
def no_thread_settings(monkeypatch):
    for name in (*backend.USER_THREAD_VARIABLES, "NPSEQ_BLAS_THREADS"):
        monkeypatch.delenv(name, raising=False)


def test_a_small_model_runs_on_one_blas_thread_and_a_large_one_keeps_the_default(no_thread_settings):
    small = Sized(256, 768)  # a GRU of hidden 256
    assert small.weights.size < backend.BLAS_THREADS_MIN_ELEMENTS
    assert backend.chosen_blas_threads(small) == 1
    assert backend.chosen_blas_threads(Sized(512, 1536)) is None  # left as BLAS has it


@pytest.mark.parametrize("hidden, expected", [(256, 1), (320, None)])
def test_the_thread_choice_reads_a_real_models_parameters(no_thread_settings, hidden, expected):
    """The demo's model on either side of the measured boundary (benchmarks/blas_threads.py --steps-only): a
    model's parameters are :class:`Parameter` records, not arrays, and their sizes must be read through them."""
    model = build_seq2seq(40, 40, **dict(DEMO_SETTINGS, num_hiddens=hidden), dtype=np.float32)
    assert backend.chosen_blas_threads(model) == expected


@pytest.mark.parametrize("variable, value, expected", [
    ("OPENBLAS_NUM_THREADS", "2", None),  # the user's own setting wins: npseq leaves the count alone
    ("OMP_NUM_THREADS", "4", None),
    ("NPSEQ_BLAS_THREADS", "3", 3),
    ("NPSEQ_BLAS_THREADS", "auto", 1),
])
def test_an_explicit_thread_setting_wins(no_thread_settings, monkeypatch, variable, value, expected):
    monkeypatch.setenv(variable, value)
    assert backend.chosen_blas_threads(Sized(8, 24)) == expected


def test_a_bad_thread_setting_is_named(no_thread_settings, monkeypatch):
    monkeypatch.setenv("NPSEQ_BLAS_THREADS", "many")
    with pytest.raises(InvalidValueError, match="NPSEQ_BLAS_THREADS: expected a positive int or 'auto', got 'many'"):
        backend.chosen_blas_threads(Sized(8, 24))


def test_training_and_decoding_run_inside_the_thread_choice(no_thread_settings):
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_counts():
        return {lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"}
    before = blas_counts()
    inside = backend.with_blas_threads(lambda model: blas_counts())(Sized(8, 24))
    assert inside == {1} and blas_counts() == before  # one thread inside, the count restored after
    for function in (npseq.train.train_seq2seq, npseq.train.train_lm, npseq.decode.translate,
                     npseq.decode.evaluate_translations):
        assert function.__wrapped__  # what the decorator keeps of the function it wraps
