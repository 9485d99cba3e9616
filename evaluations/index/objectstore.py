"""An index on an object store: ``--db s3://bucket/path`` (or ``lancedb.uri``) and its storage options.

The options LanceDB gets for an ``s3://`` URI are ``lancedb.storage_options`` as written in the
config, completed from the usual AWS variables for every key the config leaves out (``VARIABLES``),
so an S3-compatible store (MinIO, Ceph, a local test server) works with the same variables the AWS
tools read. Other URIs (``gs://``, ``az://``, ``db://``) get ``storage_options`` as written.

LanceDB reports a bad store only as a long Rust error; ``explain`` turns it into one
``EvaluationsError`` naming the URL, the option (and the variable or config key it came from) and the fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from evaluations.core.errors import EvaluationsError

#: storage option -> the environment variables it is read from, first set wins (s3:// URIs)
VARIABLES: dict[str, tuple[str, ...]] = {
    "aws_access_key_id": ("AWS_ACCESS_KEY_ID",),
    "aws_secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
    "aws_session_token": ("AWS_SESSION_TOKEN",),
    "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "allow_http": ("AWS_ALLOW_HTTP",),
}


@dataclass(frozen=True)
class StoreOptions:
    """The options for one URI and where each came from (``lancedb.storage_options.<key>`` or ``$VAR``)."""

    uri: str
    options: dict[str, str]
    sources: dict[str, str]

    def source(self, key: str) -> str:
        return self.sources.get(key) or " or ".join(f"${v}" for v in VARIABLES.get(key, ())) or key


def resolve(uri: str, configured: Mapping[str, str], environ: Mapping[str, str] | None = None) -> StoreOptions:
    """``configured`` (``lancedb.storage_options``) completed from the environment for ``s3://`` URIs."""
    environ = os.environ if environ is None else environ
    options = {k: str(v) for k, v in configured.items()}
    sources = {k: f"lancedb.storage_options.{k}" for k in options}
    if uri.startswith(("s3://", "s3a://")):
        for key, names in VARIABLES.items():
            if key in options:
                continue
            name = next((n for n in names if environ.get(n)), None)
            if name is not None:
                options[key], sources[key] = environ[name], f"${name}"
    return StoreOptions(uri=uri, options=options, sources=sources)


def _bucket(uri: str) -> str:
    return uri.split("://", 1)[1].split("/", 1)[0]


def explain(exc: BaseException, store: StoreOptions) -> EvaluationsError:
    """One clear error for a store LanceDB could not open or list."""
    text = str(exc)
    endpoint = store.options.get("endpoint", "the default AWS endpoint")
    keys = f"{store.source('aws_access_key_id')} / {store.source('aws_secret_access_key')}"
    if "NoSuchBucket" in text or re.search(r"status: 404", text):
        return EvaluationsError(f"the bucket {_bucket(store.uri)!r} does not exist at {endpoint}", where=store.uri,
                                fix=f"create the bucket, or correct the bucket in --db / lancedb.uri "
                                    f"(endpoint from {store.source('endpoint')})")
    if re.search(r"InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|ExpiredToken|status: 40[13]", text):
        code = next(iter(re.findall(r"<Code>(\w+)</Code>", text)), "access denied")
        return EvaluationsError(f"the object store refused the credentials ({code})", where=store.uri,
                                fix=f"set valid credentials with read/write access to the bucket in {keys}")
    bad_value = re.search(r'failed to parse "(.*?)" as (\w+)', text)
    if bad_value:
        value, kind = bad_value.groups()
        key = next((k for k, v in store.options.items() if v == value), None)
        named = store.source(key) if key else "an AWS_* variable (set but empty?)"
        return EvaluationsError(f"an object store setting is not a valid {kind}: {value!r} (from {named})",
                                where=store.uri, fix=f"set {named} to a valid {kind} (e.g. true/false), or unset it")
    if "BadScheme" in text and endpoint.startswith("http://"):
        return EvaluationsError(f"the endpoint {endpoint} is plain http, which is refused by default",
                                where=store.uri, fix="set AWS_ALLOW_HTTP=true (or lancedb.storage_options."
                                                     "allow_http: 'true'), or use an https endpoint")
    if re.search(r"kind: (Connect|Timeout)|dns error|Connection refused|timed out|BadScheme", text):
        return EvaluationsError(f"cannot reach the object store at {endpoint}", where=store.uri,
                                fix=f"check the endpoint ({store.source('endpoint')}) is right and the server is "
                                    "running, and the network allows it")
    first = re.sub(r",?\s*/\S+\.rs:\d+:\d+", "", text.splitlines()[0] if text else type(exc).__name__)[:300]
    if "region" in text.lower():
        return EvaluationsError(f"the object store needs a region ({first})", where=store.uri,
                                fix=f"set {store.source('region')}, and {store.source('endpoint')} for an "
                                    "S3-compatible store")
    return EvaluationsError(f"cannot open the LanceDB index: {first}", where=store.uri,
                            fix="check --db / lancedb.uri, lancedb.storage_options and the AWS_* variables "
                                "(credentials, AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP)")
