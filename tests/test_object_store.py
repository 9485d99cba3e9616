"""The index on an object store: ``--db s3://bucket/path`` against a real S3-compatible server.

The server is moto's (``ThreadedMotoServer``) on a free port of 127.0.0.1, with authentication on: an IAM
user and its access key are made first, then every request must be signed with them. The CLI gets the
usual AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``,
``AWS_ALLOW_HTTP``), as it would for MinIO. Every run on the bucket is compared with the same run on a
local folder: rankings, scores and metrics in cases.jsonl and summary.json must be equal.

The runs here write no report.html/report.md (the suite's default, ``EVALUATIONS_REPORTS=none``): those go to
the local run folder whatever ``--db`` is, and they are tested by the report modules.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from conftest import REPLIQA_20, write_scifact_subset
from fake_llm_server import FakeLLMServer
from shared_embeddings import shared_minilm  # noqa: F401  (fixture: one MiniLM vector per text this session)
from test_cli_retrieval import REPO, run_cli
from test_run_survives import _env, _gold, _read, _responder, kill_after_cases

from evaluations.core.config import LanceDB
from evaluations.index.objectstore import resolve
from evaluations.results.folder import PARTIAL_FILE

pytestmark = pytest.mark.usefixtures("shared_minilm")
BUCKET = "evaluations-test"
COMPARED = ("retrieved", "scores", "metrics")
#: the answering runs read the first 10 answerable RepliQA questions: a run killed after 5 has 5 left to run
CASES = 10


@pytest.fixture(scope="module")
def s3():
    """A real S3-compatible server with one bucket and one user; yields the AWS variables for it."""
    import boto3
    import moto.settings
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    admin = dict(endpoint_url=endpoint, aws_access_key_id="setup", aws_secret_access_key="setup",
                 region_name="us-east-1")
    iam = boto3.client("iam", **admin)
    iam.create_user(UserName="evaluations")
    key = iam.create_access_key(UserName="evaluations")["AccessKey"]
    iam.put_user_policy(UserName="evaluations", PolicyName="s3", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    boto3.client("s3", **admin).create_bucket(Bucket=BUCKET)
    before = moto.settings.INITIAL_NO_AUTH_ACTION_COUNT
    moto.settings.INITIAL_NO_AUTH_ACTION_COUNT = 0  # from now on every request must carry the user's signature
    env = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
           "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true"}
    yield env
    moto.settings.INITIAL_NO_AUTH_ACTION_COUNT = before
    server.stop()


def _objects(env: dict[str, str], prefix: str) -> list[str]:
    import boto3

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name=env["AWS_REGION"],
                          aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def _beir(data: Path, db: str, out: Path, mode: str, env: dict[str, str], *extra: str):
    return run_cli("beir", str(data), "--search-mode", mode, "--db", db, "--out", str(out), "--no-progress",
                   "--limit", "10", "--k", "1,5,10,100", *extra, env=env)


def _same_results(a: Path, b: Path, index: bool = True) -> None:
    a_summary, a_records = _read(a)
    b_summary, b_records = _read(b)
    assert list(a_records) == list(b_records) and len(a_records) == 10
    for name, record in a_records.items():
        for key in COMPARED:
            assert record[key] == b_records[name][key], (name, key)
    assert a_summary["metrics"] == b_summary["metrics"] and a_summary["metrics"]["ndcg@10"] > 0
    for key in ("documents", "chunks", "fingerprint", "vectors") + (
            ("chunked_documents", "embedded_documents", "deleted_documents") if index else ()):
        assert a_summary["index"][key] == b_summary["index"][key], key


@pytest.mark.parametrize("mode", ["fts", "vector"])
def test_index_search_reindex_and_skip_db_on_s3_equal_a_local_folder(s3, mode, tmp_path):
    """Real SciFact (10 queries' relevant abstracts and 20 others, the 10 queries run): the same results from a
    bucket as from a folder, for a new index, an incremental re-index and the --skip-db refusal."""
    data = write_scifact_subset(tmp_path / "data", 10, 20)
    env = {**s3, "HAIKU_RAG_CONFIG_PATH": ""}
    remote, local = f"s3://{BUCKET}/{mode}/db", str(tmp_path / "local-db")

    for where, db in (("s3", remote), ("local", local)):
        proc = _beir(data, db, tmp_path / f"{where}-1", mode, env)
        assert proc.returncode == 0, proc.stderr
    _same_results(tmp_path / "s3-1", tmp_path / "local-1")
    keys = _objects(s3, f"{mode}/db/")
    assert any(k.startswith(f"{mode}/db/chunks.lance/") for k in keys)
    assert any(k.startswith(f"{mode}/db/vectors.lance/") for k in keys) == (mode == "vector")
    assert not (REPO / "s3:").exists() and not (tmp_path / "s3:").exists()  # no local folder named after the URI
    first = json.loads((tmp_path / "s3-1" / "summary.json").read_text())["index"]
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
    assert first["path"] == remote and first["chunked_documents"] == first["documents"] == len(corpus)

    # one document changed, one added: only those two are chunked again (and embedded, in vector mode)
    corpus[-1]["text"] += " Zebrafish fins regrow after amputation."
    extra = {"_id": "added-doc", "title": "", "text": "A new abstract about zebrafish fin regeneration."}
    (data / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [*corpus, extra]))
    for where, db in (("s3", remote), ("local", local)):
        proc = _beir(data, db, tmp_path / f"{where}-2", mode, env)
        assert proc.returncode == 0, proc.stderr
    _same_results(tmp_path / "s3-2", tmp_path / "local-2")
    again = json.loads((tmp_path / "s3-2" / "summary.json").read_text())["index"]
    assert (again["chunked_documents"], again["deleted_documents"], again["documents"]) == (2, 1, len(corpus) + 1)
    assert again["embedded_documents"] == (2 if mode == "vector" else 0)
    assert again["fingerprint"] != first["fingerprint"]

    # --skip-db uses the index as is when it holds this corpus ...
    for where, db in (("s3", remote), ("local", local)):
        proc = _beir(data, db, tmp_path / f"{where}-3", mode, env, "--skip-db")
        assert proc.returncode == 0, proc.stderr
    _same_results(tmp_path / "s3-3", tmp_path / "local-3")
    _same_results(tmp_path / "s3-3", tmp_path / "s3-2", index=False)  # nothing indexed, the same results
    # ... and refuses it, the same way, when it holds another
    (data / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    refusals = [_beir(data, db, tmp_path / f"{where}-4", mode, env, "--skip-db")
                for where, db in (("s3", remote), ("local", local))]
    for proc, db in zip(refusals, (remote, local)):
        assert proc.returncode == 2 and "another corpus" in proc.stderr and db in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert refusals[0].stderr.replace(remote, "DB") == refusals[1].stderr.replace(local, "DB")


def _answering(db: str, *extra: str) -> list[str]:
    """The CLI arguments of an answering RepliQA run (the first ``CASES`` questions) with its index at ``db``."""
    return ["repliqa", "--source", str(REPLIQA_20), "--limit", str(CASES), "--search-mode", "fts", "--qa-model",
            "ollama:qa-llm", "--db", db, "--no-progress", *extra]


def test_kill_and_resume_with_the_index_on_s3_equals_a_straight_run(s3, tmp_path):
    """The RepliQA sample with answers (its first 10 questions, protocol-level QA server), its index in the
    bucket: SIGKILL after 5 cases, resume, and the run equals a straight run whose index is also in the bucket.

    The reference-free judge (answer_relevance, which embeds every sentence of every context with MiniLM) is off
    here: what is checked is the index in the bucket across a kill and a resume; that judge's verdicts surviving
    a resume are checked by test_run_survives (the same runs with a local index)."""
    gold = _gold()
    db = f"s3://{BUCKET}/resume/db"
    no_judge = {"EVALUATIONS_REFERENCE_FREE": "none"}
    # each answer takes 0.1 s: the killed run (one case at a time) is still running when its 5th case is on disk
    # (polled every 0.05 s); the straight run answers 4 at a time (its cases.jsonl is written in dataset order)
    with FakeLLMServer(models=("qa-llm",), responder=_responder(gold, set()), latency=0.1) as server:
        env_a = {**s3, **_env(server, tmp_path / "data-a"), **no_judge}
        straight = run_cli(*_answering(db, "--concurrency", "4", "--out", str(tmp_path / "straight")), env=env_a)
        assert straight.returncode == 0, straight.stderr

        out = tmp_path / "killed"
        env_b = {**s3, **_env(server, tmp_path / "data-b"), **no_judge}
        kept = kill_after_cases(_answering(db, "--concurrency", "1", "--out", str(out)), env_b, out, 5)
        assert 5 <= kept < CASES and (out / PARTIAL_FILE).is_file()

        resumed = run_cli(*_answering(db, "--concurrency", "1", "--resume", str(out)), env=env_b)
        assert resumed.returncode == 0, resumed.stderr
        assert f"{kept} finished, {CASES - kept} to run" in resumed.stderr

    a_summary, a_records = _read(tmp_path / "straight")
    b_summary, b_records = _read(out)
    assert list(a_records) == list(b_records) and len(a_records) == CASES
    for name, record in a_records.items():
        for key in ("retrieved", "scores", "metrics", "answer", "judges", "context", "context_text"):
            assert record[key] == b_records[name][key], (name, key)
    assert a_summary["metrics"] == b_summary["metrics"] and a_summary["counts"] == b_summary["counts"]
    assert a_summary["answers"]["judges"] == b_summary["answers"]["judges"]
    assert "exact_match" in a_summary["answers"]["judges"]  # the gold-based judges did judge both runs
    assert a_summary["index"]["path"] == b_summary["index"]["path"] == db
    assert b_summary["run"]["resumed"] is True


def _fails(tmp_path: Path, data: Path, db: str, env: dict[str, str]) -> str:
    proc = run_cli("beir", str(data), "--search-mode", "fts", "--db", db, "--out", str(tmp_path / "run"),
                   "--no-progress", "--limit", "2", env={**env, "HAIKU_RAG_CONFIG_PATH": ""})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "RetryError" not in proc.stderr
    assert not (tmp_path / "run").exists()  # no empty run folder is left behind
    return " ".join(proc.stderr.split())


def test_a_bad_object_store_is_one_clear_error(s3, tmp_path, scifact_small):
    good = f"s3://{BUCKET}/errors/db"
    text = _fails(tmp_path, scifact_small, good, {**s3, "AWS_SECRET_ACCESS_KEY": "wrong"})
    assert "refused the credentials (SignatureDoesNotMatch)" in text and "$AWS_SECRET_ACCESS_KEY" in text
    text = _fails(tmp_path, scifact_small, good, {**s3, "AWS_ACCESS_KEY_ID": "AKIAUNKNOWN"})
    assert "refused the credentials (InvalidAccessKeyId)" in text and "$AWS_ACCESS_KEY_ID" in text
    text = _fails(tmp_path, scifact_small, "s3://no-such-bucket/db", s3)
    assert "bucket 'no-such-bucket' does not exist" in text and "s3://no-such-bucket/db" in text
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    text = _fails(tmp_path, scifact_small, good, {**s3, "AWS_ENDPOINT_URL": closed})
    assert f"cannot reach the object store at {closed}" in text and "$AWS_ENDPOINT_URL" in text
    text = _fails(tmp_path, scifact_small, good, {**s3, "AWS_ALLOW_HTTP": "false"})
    assert "plain http" in text and "AWS_ALLOW_HTTP=true" in text
    text = _fails(tmp_path, scifact_small, good, {**s3, "AWS_ALLOW_HTTP": "yes please"})
    assert "not a valid boolean: 'yes please' (from $AWS_ALLOW_HTTP)" in text


def test_config_storage_options_win_over_the_variables(s3, tmp_path, scifact_small):
    """``lancedb.storage_options`` in the config: used as written, the variables fill only what it leaves out."""
    config = tmp_path / "haiku.rag.yaml"
    config.write_text(f"lancedb:\n  storage_options:\n    aws_access_key_id: {s3['AWS_ACCESS_KEY_ID']}\n"
                      f"    aws_secret_access_key: {s3['AWS_SECRET_ACCESS_KEY']}\n")
    env = {**s3, "AWS_ACCESS_KEY_ID": "AKIAWRONG", "AWS_SECRET_ACCESS_KEY": "wrong"}
    proc = run_cli("beir", str(scifact_small), "--config", str(config), "--search-mode", "fts", "--db",
                   f"s3://{BUCKET}/config/db", "--out", str(tmp_path / "run"), "--no-progress", "--limit", "2",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["config"]["lancedb"]["storage_options"] == {"aws_access_key_id": "***",
                                                                "aws_secret_access_key": "***"}
    resolved = resolve("s3://b/db", LanceDB(storage_options={"region": "eu-west-1"}).storage_options,
                       {"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": "http://x:9000"})
    assert resolved.options == {"region": "eu-west-1", "endpoint": "http://x:9000"}
    assert resolved.sources == {"region": "lancedb.storage_options.region", "endpoint": "$AWS_ENDPOINT_URL"}
    assert resolve("gs://b/db", {}, {"AWS_REGION": "us-east-1"}).options == {}  # AWS variables are for s3:// only
