"""The wire protocol between the trusted grader and the sandboxed submission.

A message is one frame::

    <u32 header_len> <u32 n_buffers> <header: UTF-8 JSON> (<u64 nbytes> <raw bytes>) * n_buffers

The JSON header carries the structure; tensors, arrays and bytes travel as raw buffers that the
header refers to by index. Nothing is ever unpickled and decoding runs no code except the
constructors of allow-listed dataclasses and enums (``inferprep.specs``, ``inferprep.sim``).

Encoding of values (JSON tags start with ``$``):

==================  ========================================================================
Python value        JSON
==================  ========================================================================
None, bool, int,    as is
str
float               as is, or ``{"$f": "nan" | "inf" | "-inf"}``
list                a JSON list
tuple               ``{"$tuple": [...]}``
dict                ``{"$dict": [[key, value], ...]}`` (any encodable keys)
torch.Tensor        ``{"$t": buffer_index, "dtype": "float32", "shape": [..], "device": "cpu"}``
numpy.ndarray       ``{"$np": buffer_index, "dtype": "<f8", "shape": [..]}``
bytes               ``{"$b": buffer_index}``
torch.dtype         ``{"$dtype": "bfloat16"}``
torch.Generator     ``{"$gen": buffer_index, "device": "cpu"}`` (its RNG state)
dataclass           ``{"$dc": "module:Class", "fields": {...}}`` (allow-listed modules only)
enum member         ``{"$enum": "module:Class", "value": ...}`` (allow-listed modules only)
proxy               ``{"$proxy": id, "methods": [...], "attrs": {...}}`` (see ``Proxy``)
==================  ========================================================================

Errors: ``WireError`` for anything malformed, oversized or not encodable.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import math
import socket
import struct
import time
from typing import Any

import numpy as np
import torch

__all__ = ["WireError", "WireClosed", "Channel", "encode", "decode", "ProxyRef", "ALLOWED_MODULES"]

MAX_FRAME_BYTES = 512 * 1024 * 1024
"""Largest frame either side accepts (bytes); a larger one is an output-limit error."""

MAX_HEADER_BYTES = 4 * 1024 * 1024
"""Largest JSON header (bytes): structure is small, bulk data travels as raw buffers. Bounds the
parser's memory (a 4 MiB header of ``[[],[],...]`` still decodes in well under a second)."""

MAX_NODES = 1_000_000
"""Most JSON values one frame may hold."""

ALLOWED_MODULES = ("inferprep.specs", "inferprep.sim")
"""Dataclasses and enums from these modules (and their submodules) may cross the wire."""

_HEAD = struct.Struct("<II")
_BUF = struct.Struct("<Q")


class WireError(Exception):
    """A frame or value that cannot be encoded or decoded."""


class WireClosed(WireError):
    """The other side closed the channel (or died)."""


class FrameTooLarge(WireError):
    """A frame over ``MAX_FRAME_BYTES``."""


@dataclasses.dataclass(frozen=True)
class ProxyRef:
    """Reference to an object hosted on the other side; ``methods`` may be called, ``attrs`` read."""

    id: int
    methods: tuple[str, ...]
    attrs: dict[str, Any]


_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
    torch.float8_e4m3fn, torch.float8_e5m2)}


def _torch_dtype(name: str) -> torch.dtype:
    dt = _DTYPES.get(str(name))
    if dt is None:
        raise WireError(f"dtype {name!r} cannot cross the wire")
    return dt


def _allowed_class(path: str) -> type:
    module, _, qual = path.partition(":")
    if not any(module == m or module.startswith(m + ".") for m in ALLOWED_MODULES) or not qual.isidentifier():
        raise WireError(f"class {path!r} may not cross the wire")
    try:
        obj: Any = getattr(importlib.import_module(module), qual)
    except (ImportError, AttributeError) as e:
        raise WireError(f"unknown class {path!r}") from e
    if not isinstance(obj, type) or obj.__module__ != module:
        raise WireError(f"{path!r} is not a class defined in {module}")
    return obj


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


class _Encoder:
    def __init__(self, proxy_hook=None):
        self.buffers: list[bytes | memoryview] = []
        self.proxy_hook = proxy_hook

    def buf(self, data: bytes | memoryview) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    def enc(self, v: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise WireError("value nested too deeply")
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, enum.Enum):
            cls = type(v)
            _allowed_class(_class_path(cls))
            return {"$enum": _class_path(cls), "value": self.enc(v.value, depth + 1)}
        if isinstance(v, int):
            return int(v)
        if isinstance(v, float):
            if math.isfinite(v):
                return v
            return {"$f": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
        if isinstance(v, torch.Tensor):
            t = v.detach()
            device = str(t.device)
            if t.is_sparse or t.layout != torch.strided:
                raise WireError("only strided (dense) tensors cross the wire")
            try:
                t = t.to("cpu").contiguous()
                data = b"" if t.numel() == 0 else t.reshape(-1).view(torch.uint8).numpy().tobytes()
            except (RuntimeError, NotImplementedError, TypeError) as e:
                raise WireError(f"a tensor on {device} with dtype {t.dtype} cannot be sent: {e}") from e
            return {"$t": self.buf(data), "dtype": str(t.dtype).removeprefix("torch."),
                    "shape": list(t.shape), "device": device}
        if isinstance(v, np.ndarray):
            if v.dtype.hasobject:
                raise WireError("object arrays cannot cross the wire")
            a = np.ascontiguousarray(v)
            return {"$np": self.buf(a.tobytes()), "dtype": a.dtype.str, "shape": list(a.shape)}
        if isinstance(v, np.generic):
            return self.enc(v.item(), depth + 1)
        if isinstance(v, (bytes, bytearray)):
            return {"$b": self.buf(bytes(v))}
        if isinstance(v, torch.dtype):
            return {"$dtype": str(v).removeprefix("torch.")}
        if isinstance(v, torch.Generator):
            state = v.get_state()
            return {"$gen": self.buf(state.numpy().tobytes()), "device": str(v.device)}
        if isinstance(v, tuple):
            return {"$tuple": [self.enc(x, depth + 1) for x in v]}
        if isinstance(v, list):
            return [self.enc(x, depth + 1) for x in v]
        if isinstance(v, dict):
            return {"$dict": [[self.enc(k, depth + 1), self.enc(x, depth + 1)] for k, x in v.items()]}
        if self.proxy_hook is not None:
            ref = self.proxy_hook(v)
            if ref is not None:
                return {"$proxy": ref.id, "methods": list(ref.methods),
                        "attrs": {k: self.enc(x, depth + 1) for k, x in ref.attrs.items()}}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            path = _class_path(type(v))
            _allowed_class(path)
            fields = {f.name: self.enc(getattr(v, f.name), depth + 1)
                      for f in dataclasses.fields(v) if f.init}
            return {"$dc": path, "fields": fields}
        raise WireError(f"a value of type {type(v).__name__} cannot cross the wire")


class _Decoder:
    def __init__(self, buffers: list[bytes], proxy_factory=None, device_map=None):
        self.nodes = 0
        self.buffers = buffers
        self.proxy_factory = proxy_factory
        self.device_map = device_map

    def buf(self, i: Any) -> bytes:
        if not isinstance(i, int) or not 0 <= i < len(self.buffers):
            raise WireError(f"bad buffer index {i!r}")
        return self.buffers[i]

    def dec(self, v: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise WireError("value nested too deeply")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise WireError(f"more than {MAX_NODES} values in one message")
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return v.encode("utf-8", "replace").decode("utf-8")  # lone surrogates
            return v
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, list):
            return [self.dec(x, depth + 1) for x in v]
        if not isinstance(v, dict) or len(v) == 0:
            raise WireError(f"malformed value {str(v)[:80]!r}")
        if "$t" in v:
            return self.tensor(v)
        if "$np" in v:
            dtype = np.dtype(v["dtype"])
            if dtype.hasobject:
                raise WireError("object arrays cannot cross the wire")
            shape = tuple(int(s) for s in v["shape"])
            data = self.buf(v["$np"])
            if len(data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
                raise WireError("array buffer size does not match its shape")
            return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
        if "$f" in v:
            return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v["$f"]]
        if "$tuple" in v:
            return tuple(self.dec(x, depth + 1) for x in v["$tuple"])
        if "$dict" in v:
            out = {}
            for pair in v["$dict"]:
                k, x = pair
                k = self.dec(k, depth + 1)
                if isinstance(k, list):
                    raise WireError("unhashable dict key")
                out[k] = self.dec(x, depth + 1)
            return out
        if "$b" in v:
            return bytes(self.buf(v["$b"]))
        if "$dtype" in v:
            return _torch_dtype(v["$dtype"])
        if "$gen" in v:
            device = str(v.get("device", "cpu"))
            if self.device_map is not None:
                device = self.device_map(device)
            g = torch.Generator(device=device)
            try:
                g.set_state(torch.frombuffer(bytearray(self.buf(v["$gen"])), dtype=torch.uint8))
            except (RuntimeError, ValueError) as e:
                raise WireError(f"malformed generator state: {e}") from e
            return g
        if "$dc" in v:
            cls = _allowed_class(v["$dc"])
            if not dataclasses.is_dataclass(cls):
                raise WireError(f"{v['$dc']!r} is not a dataclass")
            fields = {str(k): self.dec(x, depth + 1) for k, x in v["fields"].items()}
            try:
                return cls(**fields)
            except (TypeError, ValueError) as e:
                raise WireError(f"cannot build {v['$dc']}: {e}") from e
        if "$enum" in v:
            cls = _allowed_class(v["$enum"])
            if not issubclass(cls, enum.Enum):
                raise WireError(f"{v['$enum']!r} is not an enum")
            try:
                return cls(self.dec(v["value"], depth + 1))
            except ValueError as e:
                raise WireError(str(e)) from e
        if "$proxy" in v:
            if self.proxy_factory is None:
                raise WireError("proxies are not accepted in this direction")
            ref = ProxyRef(int(v["$proxy"]), tuple(str(m) for m in v["methods"]),
                           {str(k): self.dec(x, depth + 1) for k, x in v.get("attrs", {}).items()})
            return self.proxy_factory(ref)
        raise WireError(f"unknown tag in {str(v)[:80]!r}")

    def tensor(self, v: dict) -> torch.Tensor:
        dtype = _torch_dtype(str(v["dtype"]))
        shape = tuple(int(s) for s in v["shape"])
        if any(s < 0 for s in shape):
            raise WireError("negative tensor dimension")
        data = self.buf(v["$t"])
        numel = math.prod(shape)
        itemsize = torch.empty((), dtype=dtype).element_size()
        if len(data) != numel * itemsize:
            raise WireError("tensor buffer size does not match its shape and dtype")
        if numel == 0:
            t = torch.empty(shape, dtype=dtype)
        else:
            t = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape)
        device = str(v.get("device", "cpu"))
        if self.device_map is not None:
            device = self.device_map(device)
        if device != "cpu":
            t = t.to(device)
        return t


def encode(value: Any, proxy_hook=None) -> tuple[bytes, list]:
    """Encode ``value`` into (JSON header bytes, buffers). Raises ``WireError``."""
    e = _Encoder(proxy_hook)
    head = json.dumps(e.enc(value), allow_nan=False, separators=(",", ":")).encode()
    return head, e.buffers


def decode(head: bytes, buffers: list[bytes], proxy_factory=None, device_map=None) -> Any:
    """Decode a frame produced by ``encode``. Raises ``WireError`` on anything malformed: whatever
    goes wrong while decoding bytes from the other side is that side's fault, never ours."""
    if len(head) > MAX_HEADER_BYTES:
        raise FrameTooLarge(f"JSON header of {len(head)} bytes exceeds {MAX_HEADER_BYTES}")
    try:
        obj = json.loads(head)
        return _Decoder(buffers, proxy_factory, device_map).dec(obj)
    except WireError:
        raise
    except Exception as e:  # noqa: BLE001 - RecursionError, MemoryError, TypeError, ...
        raise WireError(f"malformed message: {type(e).__name__}: {str(e)[:200]}") from None


class Channel:
    """A framed, bidirectional message channel over a connected stream socket.

    ``send(value)`` and ``recv() -> value``; ``recv`` raises ``WireClosed`` on EOF,
    ``socket.timeout`` when ``timeout`` (seconds) passes, ``FrameTooLarge`` for an oversized frame.
    """

    def __init__(self, sock: socket.socket, proxy_hook=None, proxy_factory=None, device_map=None,
                 max_frame: int = MAX_FRAME_BYTES, max_header: int = MAX_HEADER_BYTES):
        self.max_header = max_header
        self.sock = sock
        self.proxy_hook = proxy_hook
        self.proxy_factory = proxy_factory
        self.device_map = device_map
        self.max_frame = max_frame
        self.bytes_in = 0
        self.bytes_out = 0

    def send(self, value: Any) -> tuple[bytes, list]:
        """Send one frame; returns its encoding (JSON header, buffers)."""
        head, bufs = encode(value, self.proxy_hook)
        parts = [_HEAD.pack(len(head), len(bufs)), head]
        for b in bufs:
            parts.append(_BUF.pack(len(b)))
            parts.append(b)
        total = sum(len(p) for p in parts)
        if total > self.max_frame:
            raise FrameTooLarge(f"message of {total} bytes exceeds the {self.max_frame}-byte limit")
        self.bytes_out += total
        self.sock.sendall(b"".join(parts) if total < 1 << 16 else _join_large(parts))
        return head, bufs

    def _exact(self, n: int, deadline: float | None) -> bytearray:
        """Read exactly ``n`` bytes before ``deadline`` (time.monotonic), growing the buffer as data
        arrives (a header that announces 512 MiB and sends nothing costs nothing)."""
        out = bytearray()
        while len(out) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise socket.timeout("deadline passed while reading a frame")
                self.sock.settimeout(left)
            chunk = self.sock.recv(min(n - len(out), 1 << 20))
            if not chunk:
                raise WireClosed("the other side closed the channel")
            out += chunk
        return out

    def recv(self, timeout: float | None = None, deadline: float | None = None) -> Any:
        """The next value. ``deadline`` (time.monotonic) or ``timeout`` (seconds) bounds the whole
        frame, not each read: a sender that drips bytes cannot stretch it."""
        if deadline is None and timeout is not None:
            deadline = time.monotonic() + timeout
        if deadline is None:
            self.sock.settimeout(None)
        head_len, nbuf = _HEAD.unpack(self._exact(_HEAD.size, deadline))
        if head_len > min(self.max_frame, self.max_header) or nbuf > 1 << 16:
            raise FrameTooLarge(f"frame header announces {head_len} bytes / {nbuf} buffers")
        total = head_len
        head = bytes(self._exact(head_len, deadline))
        bufs = []
        for _ in range(nbuf):
            (n,) = _BUF.unpack(self._exact(_BUF.size, deadline))
            total += n
            if total > self.max_frame:
                raise FrameTooLarge(f"message exceeds the {self.max_frame}-byte limit")
            bufs.append(bytes(self._exact(n, deadline)))
        self.bytes_in += total
        return decode(head, bufs, self.proxy_factory, self.device_map)


def _join_large(parts: list) -> bytes:
    return b"".join(bytes(p) if isinstance(p, memoryview) else p for p in parts)
