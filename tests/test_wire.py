"""The wire protocol: round trips of every supported type; malformed frames are rejected, never
executed."""

import json
import math
import pickle
import socket
import struct

import numpy as np
import pytest
import torch

from inferprep.runner.wire import Channel, FrameTooLarge, WireClosed, WireError, decode, encode


def roundtrip(v):
    head, bufs = encode(v)
    return decode(head, [bytes(b) for b in bufs])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64])
def test_tensor_roundtrip_keeps_dtype_shape_values(dtype):
    t = (torch.arange(24, dtype=torch.float64).reshape(2, 3, 4) - 7).to(dtype)
    out = roundtrip(t)
    assert out.dtype == dtype and out.shape == t.shape and torch.equal(out, t)


def test_non_contiguous_empty_and_scalar_tensors():
    t = torch.arange(12.0).reshape(3, 4).t()
    assert torch.equal(roundtrip(t), t)
    e = torch.empty(0, 5)
    assert roundtrip(e).shape == (0, 5)
    s = torch.tensor(3.5)
    assert roundtrip(s).shape == () and roundtrip(s).item() == 3.5


def test_containers_and_special_floats():
    v = {"a": [1, 2.5, None, True], 3: ("x", float("inf")), (1, 2): {"nan": float("nan")}, "b": b"\x00\x01"}
    out = roundtrip(v)
    assert out["a"] == [1, 2.5, None, True] and out[3] == ("x", math.inf) and out["b"] == b"\x00\x01"
    assert math.isnan(out[(1, 2)]["nan"])
    assert isinstance(roundtrip((1,)), tuple) and isinstance(roundtrip([1]), list)
    # the encoder's fast path (exact types inside a list or dict) leaves the rest to the full chain
    got = roundtrip([math.nan, -math.inf, 0.5, {math.inf: [-math.inf]}, np.float32(2.0), torch.tensor(1.5)])
    assert math.isnan(got[0]) and got[1] == -math.inf and got[2] == 0.5 and got[3] == {math.inf: [-math.inf]}
    assert got[4] == 2.0 and type(got[4]) is float and torch.equal(got[5], torch.tensor(1.5))
    assert roundtrip(torch.bfloat16) is torch.bfloat16
    arr = np.arange(6, dtype=np.int16).reshape(2, 3)
    assert np.array_equal(roundtrip(arr), arr) and roundtrip(arr).dtype == np.int16


def test_unsupported_values_are_refused():
    for v in (lambda: 1, object(), {1, 2}, np.array([object()], dtype=object), torch.zeros(2).to_sparse()):
        with pytest.raises(WireError):
            encode(v)


def test_classes_outside_the_allow_list_never_cross():
    head = json.dumps({"$dc": "os:system", "fields": {}}).encode()
    with pytest.raises(WireError):
        decode(head, [])
    head = json.dumps({"$dc": "subprocess:Popen", "fields": {"args": ["true"]}}).encode()
    with pytest.raises(WireError):
        decode(head, [])


@pytest.mark.parametrize("head,bufs", [
    (b"not json", []),
    (json.dumps({"$t": 0, "dtype": "float32", "shape": [4]}).encode(), [b"\x00" * 15]),   # wrong size
    (json.dumps({"$t": 3, "dtype": "float32", "shape": [1]}).encode(), [b"\x00" * 4]),    # bad index
    (json.dumps({"$t": 0, "dtype": "Tensor", "shape": [1]}).encode(), [b"\x00" * 4]),     # not a dtype
    (json.dumps({"$t": 0, "dtype": "float32", "shape": [-1]}).encode(), [b""]),
    (json.dumps({"$weird": 1}).encode(), []),
    (json.dumps({"$np": 0, "dtype": "|O", "shape": [1]}).encode(), [b"\x00" * 8]),
])
def test_malformed_frames_are_rejected(head, bufs):
    with pytest.raises(WireError):
        decode(head, bufs)


def test_pickle_payload_is_just_bytes():
    evil = pickle.dumps(print)
    assert roundtrip(evil) == evil  # bytes stay bytes: nothing is ever unpickled


def test_channel_frames_limits_and_eof():
    a, b = socket.socketpair()
    ca, cb = Channel(a), Channel(b, max_frame=1 << 16)
    ca.send({"x": torch.ones(3)})
    assert torch.equal(cb.recv(timeout=5)["x"], torch.ones(3))
    a.sendall(struct.pack("<II", 1 << 30, 0))
    with pytest.raises(FrameTooLarge):
        cb.recv(timeout=5)
    a.close()
    with pytest.raises(WireClosed):
        Channel(b).recv(timeout=5)


def test_expect_close_rejects_finite_for_infinite_and_nan():
    from inferprep.grading.checks import WrongAnswer, expect_close
    assert expect_close(math.inf, math.inf, rtol=0) == math.inf
    for bad in (1e308, -math.inf, math.nan, "1.0", True, None):
        with pytest.raises(WrongAnswer):
            expect_close(bad, math.inf, rtol=0)
    with pytest.raises(WrongAnswer):
        expect_close(1.0 + 2e-6, 1.0, rtol=1e-6)
    assert expect_close(1.0 + 5e-7, 1.0, rtol=1e-6)


def test_expect_tensor_rejects_nan_inf_shape_dtype():
    from inferprep.grading.checks import WrongAnswer, expect_tensor
    e = torch.tensor([1.0, 2.0])
    for bad in (torch.tensor([1.0, float("nan")]), torch.tensor([1.0, float("inf")]), torch.tensor([1.0]),
                torch.tensor([1.0, 2.0], dtype=torch.float64), [1.0, 2.0], torch.tensor([1.0, 2.1])):
        with pytest.raises(WrongAnswer):
            expect_tensor(bad, e, rtol=1e-3)
    expect_tensor(torch.tensor([1.0, 2.0001]), e, rtol=1e-3)


def test_generator_crosses_with_its_state():
    g = torch.Generator().manual_seed(1234)
    torch.rand(3, generator=g)
    g2 = roundtrip(g)
    assert isinstance(g2, torch.Generator)
    assert torch.equal(torch.rand(5, generator=g), torch.rand(5, generator=g2))
    with pytest.raises(WireError):
        decode(json.dumps({"$gen": 0, "device": "cpu"}).encode(), [b"\x00" * 3])


def test_nesting_depth_counts_scalars_inside_containers():
    """Red team: the encoder's inline path for a list's or dict's plain items skipped the depth
    check, so 65 nested lists around a scalar encoded, and only the other side refused them."""
    v: object = 1
    for _ in range(65):
        v = [v]
    with pytest.raises(WireError, match="nested too deeply"):
        encode(v)
    d: object = 1
    for _ in range(65):
        d = {"k": d}
    with pytest.raises(WireError, match="nested too deeply"):
        encode(d)
    w: object = 1
    for _ in range(64):
        w = [w]
    assert roundtrip(w) == w
