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

Each buffer is referenced by exactly one value (the encoder never shares one; the decoder refuses a
second reference), so a frame decodes to at most its own size plus ``FRAME_OVERHEAD_BYTES``.

Errors: ``WireError`` for anything malformed, oversized or not encodable.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import math
import reprlib
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
parser's memory (a 4 MiB header of ``[[],[],...]``: about 100 MB at its peak, in about a second)."""

MAX_NODES = 1_000_000
"""Most JSON values one frame may hold."""

FRAME_OVERHEAD_BYTES = 64 * 1024
"""A frame decodes to at most its own size plus this many bytes (tensor, array, bytes and generator
payloads plus string characters). Every raw buffer is referenced at most once, so a frame's
buffers are copied at most once each: no small frame fills the receiver's memory."""

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
    dt = _DTYPES.get(name) if type(name) is str else None
    if dt is None:
        raise WireError(f"dtype {_brief(name)} cannot cross the wire")
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


_AS_IS = frozenset({str, int, bool, type(None)})
"""Exact types the encoder sends as they are (so does a finite float); subclasses take the chain."""


class _Encoder:
    def __init__(self, proxy_hook=None):
        self.buffers: list[bytes | memoryview] = []
        self.proxy_hook = proxy_hook

    def buf(self, data: bytes | memoryview) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    # A list's or dict's items that are sent as they are (``_AS_IS``, or a finite float) are
    # checked inline: a call per item was most of the cost of a trace of 100,000 values.
    def _list(self, v: list, depth: int) -> list:
        if depth > 64 and v:                       # as enc would say of its first item
            raise WireError("value nested too deeply")
        return [x if type(x) in _AS_IS or (type(x) is float and x - x == 0.0) else self.enc(x, depth) for x in v]

    def _pairs(self, v: dict, depth: int) -> list:
        if depth > 64 and v:
            raise WireError("value nested too deeply")
        return [[k if type(k) in _AS_IS or (type(k) is float and k - k == 0.0) else self.enc(k, depth),
                 x if type(x) in _AS_IS or (type(x) is float and x - x == 0.0) else self.enc(x, depth)]
                for k, x in v.items()]

    def enc(self, v: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise WireError("value nested too deeply")
        # Fast path by exact type for the values a big nested argument is made of (a trace's
        # events): the isinstance chain below costs a metaclass check per value (torch.Tensor's).
        # Each branch returns what the chain returns for that exact type.
        cls = type(v)
        if cls in _AS_IS or (cls is float and v - v == 0.0):            # a finite float
            return v
        if cls is list:
            return self._list(v, depth + 1)
        if cls is dict:
            return {"$dict": self._pairs(v, depth + 1)}
        if isinstance(v, (bool, str)):
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
    """Decodes one frame's JSON tree. Bounded: every raw buffer is taken at most once (a second
    reference would be a second copy of it), every tensor or array header must match its buffer
    byte for byte before anything is allocated, and the decoded bytes (buffers taken plus string
    characters) are charged against ``budget``, which by default is the frame's own size plus
    ``FRAME_OVERHEAD_BYTES``. ``deadline`` (time.monotonic) bounds the CPU time spent."""

    def __init__(self, buffers: list, proxy_factory=None, device_map=None, budget: int | None = None,
                 deadline: float | None = None):
        self.nodes = 0
        self.buffers = buffers
        self.taken = bytearray(len(buffers))
        self.proxy_factory = proxy_factory
        self.device_map = device_map
        self.budget = math.inf if budget is None else budget
        self.deadline = deadline

    def charge(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise WireError("the message decodes to more bytes than the frame holds")

    def take(self, i: Any, nbytes: int | None = None) -> bytes:
        """Buffer ``i``, which no other value of this frame may use. ``nbytes``: the size its header
        declares, charged before the buffer is compared with it (else the buffer's size is)."""
        if type(i) is not int or not 0 <= i < len(self.buffers):
            raise WireError(f"bad buffer index {_brief(i)}")
        if self.taken[i]:
            raise WireError(f"buffer {i} is referenced more than once")
        self.taken[i] = 1
        data = self.buffers[i]
        self.buffers[i] = None  # the decoded value replaces it (decode gives us our own list)
        self.charge(len(data) if nbytes is None else nbytes)
        if nbytes is not None and len(data) != nbytes:
            raise WireError(f"buffer {i} holds {len(data)} bytes, its header declares {nbytes}")
        return data

    def dec(self, v: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise WireError("value nested too deeply")
        nodes = self.nodes = self.nodes + 1
        if nodes > MAX_NODES:
            raise WireError(f"more than {MAX_NODES} values in one message")
        if not nodes & 0x3FF and self.deadline is not None and time.monotonic() > self.deadline:
            raise socket.timeout("deadline passed while decoding a frame")
        cls = type(v)
        if cls is str:
            budget = self.budget = self.budget - len(v)
            if budget < 0:
                raise WireError("the message decodes to more bytes than the frame holds")
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return v.encode("utf-8", "replace").decode("utf-8")  # lone surrogates
            return v
        if cls is list:  # in place: the JSON tree is ours, so its lists are not built twice
            v[:] = [self.dec(x, depth + 1) for x in v]
            return v
        if cls is dict and v:
            for tag in v:  # the tag comes first; nothing but its own keys follow
                break
            allowed = _TAGS.get(tag)
            if allowed is None or (len(v) > 1 and not allowed.issuperset(v)):
                raise WireError(f"malformed value {_brief(v)}")
            return _DECODE[tag](self, v, depth + 1)
        if v is None or cls is bool or cls is int or cls is float:
            return v
        raise WireError(f"malformed value {_brief(v)}")

    def device(self, v: dict) -> str:
        device = v.get("device", "cpu")
        if type(device) is not str:
            raise WireError(f"malformed device {_brief(device)}")
        if self.device_map is not None:
            device = self.device_map(device)
        return device

    def tensor(self, v: dict, depth: int) -> torch.Tensor:
        dtype = _torch_dtype(v["dtype"])
        shape = _shape(v["shape"])
        data = self.take(v["$t"], math.prod(shape) * _ITEMSIZE[dtype])
        if len(data) == 0:
            t = torch.empty(shape, dtype=dtype)
        else:
            # a bytearray read off the socket is this value's alone (``take``): used in place
            t = torch.frombuffer(data if type(data) is bytearray else bytearray(data),
                                 dtype=torch.uint8).view(dtype).reshape(shape)
        device = self.device(v)
        if device != "cpu":
            t = t.to(device)
        return t

    def array(self, v: dict, depth: int) -> np.ndarray:
        dtype = _np_dtype(v["dtype"])
        shape = _shape(v["shape"])
        data = self.take(v["$np"], math.prod(shape) * dtype.itemsize)
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()

    def special_float(self, v: dict, depth: int) -> float:
        special = v["$f"]
        if special not in ("nan", "inf", "-inf"):
            raise WireError(f"malformed float {_brief(special)}")
        return float(special)

    def tuple_(self, v: dict, depth: int) -> tuple:
        items = v["$tuple"]
        if type(items) is not list:
            raise WireError(f"malformed tuple {_brief(items)}")
        return tuple([self.dec(x, depth) for x in items])

    def dict_(self, v: dict, depth: int) -> dict:
        out = {}
        dec = self.dec
        items = v["$dict"]
        if type(items) is not list:
            raise WireError(f"malformed dict {_brief(items)}")
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise WireError(f"malformed dict item {_brief(pair)}")
            k = dec(pair[0], depth)
            if isinstance(k, list):
                raise WireError("unhashable dict key")
            out[k] = dec(pair[1], depth)
        return out

    def bytes_(self, v: dict, depth: int) -> bytes:
        return bytes(self.take(v["$b"]))

    def dtype(self, v: dict, depth: int) -> torch.dtype:
        return _torch_dtype(v["$dtype"])

    def generator(self, v: dict, depth: int) -> torch.Generator:
        g = torch.Generator(device=self.device(v))
        try:
            g.set_state(torch.frombuffer(bytearray(self.take(v["$gen"])), dtype=torch.uint8))
        except (RuntimeError, ValueError) as e:
            raise WireError(f"malformed generator state: {e}") from e
        return g

    def dataclass(self, v: dict, depth: int) -> Any:
        cls = _allowed_class(_str(v["$dc"]))
        if not dataclasses.is_dataclass(cls):
            raise WireError(f"{v['$dc']!r} is not a dataclass")
        fields = {str(k): self.dec(x, depth) for k, x in _dict(v["fields"]).items()}
        try:
            return cls(**fields)
        except (TypeError, ValueError) as e:
            raise WireError(f"cannot build {v['$dc']}: {e}") from e

    def enum(self, v: dict, depth: int) -> enum.Enum:
        cls = _allowed_class(_str(v["$enum"]))
        if not issubclass(cls, enum.Enum):
            raise WireError(f"{v['$enum']!r} is not an enum")
        try:
            return cls(self.dec(v["value"], depth))
        except ValueError as e:
            raise WireError(str(e)) from e

    def proxy(self, v: dict, depth: int) -> Any:
        if self.proxy_factory is None:
            raise WireError("proxies are not accepted in this direction")
        if type(v["$proxy"]) is not int:
            raise WireError(f"malformed proxy id {_brief(v['$proxy'])}")
        methods = tuple([self.dec(_str(m), depth) for m in _list(v["methods"])])
        attrs = {str(k): self.dec(x, depth) for k, x in _dict(v.get("attrs", {})).items()}
        return self.proxy_factory(ProxyRef(v["$proxy"], methods, attrs))


_DECODE = {"$t": _Decoder.tensor, "$np": _Decoder.array, "$f": _Decoder.special_float, "$tuple": _Decoder.tuple_,
           "$dict": _Decoder.dict_, "$b": _Decoder.bytes_, "$dtype": _Decoder.dtype, "$gen": _Decoder.generator,
           "$dc": _Decoder.dataclass, "$enum": _Decoder.enum, "$proxy": _Decoder.proxy}

_TAGS = {tag: frozenset((tag,) + keys) for tag, keys in {
    "$t": ("dtype", "shape", "device"), "$np": ("dtype", "shape"), "$f": (), "$tuple": (), "$dict": (), "$b": (),
    "$dtype": (), "$gen": ("device",), "$dc": ("fields",), "$enum": ("value",), "$proxy": ("methods", "attrs"),
}.items()}
"""Each tag and the keys its object may carry. The tag is the object's first key (as the encoder
writes it), and no other tag may follow: one tag per object, nothing else."""

_ITEMSIZE = {d: torch.empty((), dtype=d).element_size() for d in _DTYPES.values()}

MAX_DIMS = 64
"""Most dimensions of a tensor or array (numpy's own limit)."""

_NP_KINDS = "biufcSUVmM"


def _str(v: Any) -> str:
    if type(v) is not str:
        raise WireError(f"expected a string, got {_brief(v)}")
    return v


def _list(v: Any) -> list:
    if type(v) is not list:
        raise WireError(f"expected a list, got {_brief(v)}")
    return v


def _dict(v: Any) -> dict:
    if type(v) is not dict:
        raise WireError(f"expected an object, got {_brief(v)}")
    return v


def _shape(v: Any) -> tuple[int, ...]:
    """A shape as the encoder writes it: a list of at most ``MAX_DIMS`` JSON integers, each in
    [0, 2**63) (no floats, booleans, strings or huge integers)."""
    if type(v) is not list or len(v) > MAX_DIMS:
        raise WireError(f"malformed shape {_brief(v)}")
    for s in v:
        if type(s) is not int or not 0 <= s < 1 << 63:
            raise WireError(f"malformed shape {_brief(v)}")
    return tuple(v)


def _np_dtype(v: Any) -> np.dtype:
    """A plain numpy dtype in the canonical form ``dtype.str`` writes (``"<f8"``, ``"|b1"``,
    ``"<U5"``): no fields, sub-arrays or objects, never an empty item."""
    if type(v) is not str or len(v) > 16:
        raise WireError(f"array dtype {_brief(v)} cannot cross the wire")
    try:
        dtype = np.dtype(v)
    except (TypeError, ValueError) as e:
        raise WireError(f"array dtype {v!r} cannot cross the wire") from e
    if (dtype.str != v or dtype.kind not in _NP_KINDS or dtype.fields is not None or dtype.subdtype is not None
            or dtype.hasobject or dtype.itemsize == 0):
        raise WireError(f"array dtype {v!r} cannot cross the wire")
    return dtype


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 60, 60


def _brief(v: Any) -> str:
    """A short repr of a value from the other side, in bounded time and memory."""
    return _REPR.repr(v)[:120]


def encode(value: Any, proxy_hook=None) -> tuple[bytes, list]:
    """Encode ``value`` into (JSON header bytes, buffers). Raises ``WireError``."""
    e = _Encoder(proxy_hook)
    head = json.dumps(e.enc(value), allow_nan=False, separators=(",", ":")).encode()
    return head, e.buffers


def decode(head: bytes, buffers: list[bytes], proxy_factory=None, device_map=None, *,
           max_decoded: int | None = None, deadline: float | None = None) -> Any:
    """Decode a frame produced by ``encode``. Raises ``WireError`` on anything malformed: whatever
    goes wrong while decoding bytes from the other side is that side's fault, never ours.

    Each buffer may be referenced once; the decoded bytes (buffers, string characters) may not
    exceed ``max_decoded``, by default the frame's own size plus ``FRAME_OVERHEAD_BYTES``.
    ``deadline`` (time.monotonic) bounds the decoding too: past it, ``socket.timeout``."""
    return _decode(head, list(buffers), proxy_factory, device_map, max_decoded, deadline)


def _decode(head: bytes, buffers: list, proxy_factory, device_map, max_decoded: int | None,
            deadline: float | None, max_header: int = MAX_HEADER_BYTES) -> Any:
    """``decode`` on a list of buffers it may consume (each entry is dropped once decoded)."""
    if len(head) > max_header:
        raise FrameTooLarge(f"JSON header of {len(head)} bytes exceeds {max_header}")
    if max_decoded is None:
        max_decoded = len(head) + sum(map(len, buffers)) + FRAME_OVERHEAD_BYTES
    try:
        obj = json.loads(head)
        return _Decoder(buffers, proxy_factory, device_map, max_decoded, deadline).dec(obj)
    except (WireError, socket.timeout):
        raise
    except Exception as e:  # noqa: BLE001 - RecursionError, MemoryError, TypeError, ...
        raise WireError(f"malformed message: {type(e).__name__}: {str(e)[:200]}") from None


class Channel:
    """A framed, bidirectional message channel over a connected stream socket.

    ``send(value)`` and ``recv() -> value``; ``recv`` raises ``WireClosed`` on EOF,
    ``socket.timeout`` when ``timeout`` (seconds) passes (reading or decoding the frame),
    ``FrameTooLarge`` for an oversized frame, ``WireError`` for a malformed one.
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
        frame, not each read: a sender that drips bytes cannot stretch it, nor can a frame that is
        slow to decode (e.g. dict keys whose hashes collide)."""
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
            bufs.append(self._exact(n, deadline))   # a bytearray: a tensor's decodes in place
        self.bytes_in += total
        return _decode(head, bufs, self.proxy_factory, self.device_map, None, deadline, self.max_header)


def _join_large(parts: list) -> bytes:
    return b"".join(bytes(p) if isinstance(p, memoryview) else p for p in parts)
