"""One all-MiniLM-L6-v2 vector per text for the session: the modules that index real SciFact (or RepliQA) text
again and again for tests about runs, storage and scale-out pay its embedding once.

``shared_minilm`` (a module fixture: ``pytestmark = pytest.mark.usefixtures("shared_minilm")``) puts a memo in
front of ``EmbeddedMiniLM.embed`` for the module's tests: the first time a text is asked for, the real model
embeds it (in the batch it came in); afterwards the vector it gave is returned. What the code under test does
is unchanged: the index still decides what to embed (``embedded_chunks``, a re-index embedding nothing, the
counting embedders of test_index wrap the embedder, not the model), and every vector is the real model's. Tests
about the embedder itself (its output, its speed) do not use it; neither do Ray's workers, which are other
processes and load the model themselves.
"""

from __future__ import annotations

import numpy as np
import pytest

_VECTORS: dict[tuple[str, str, str], np.ndarray] = {}


def _memo(real):
    def embed(self, texts, *, kind="document"):
        keys = [(self.id, kind, text) for text in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in _VECTORS))
        if missing:
            vectors = real(self, [k[2] for k in missing], kind=kind)
            for key, vector in zip(missing, vectors):
                _VECTORS[key] = np.array(vector, dtype=np.float32, copy=True)
        if not texts:
            return real(self, texts, kind=kind)
        return np.stack([_VECTORS[k] for k in keys]).astype(np.float32, copy=False)

    return embed


@pytest.fixture(scope="module")
def shared_minilm():
    from evaluations.models.embedders import EmbeddedMiniLM

    mp = pytest.MonkeyPatch()
    mp.setattr(EmbeddedMiniLM, "embed", _memo(EmbeddedMiniLM.embed))
    yield
    mp.undo()
