"""Bad input is a netrun.Error subclass carrying the library's message, never a crash."""
import numpy as np
import pytest

import netrun

X = np.zeros((1, 16), np.float32)


def test_error_classes():
    assert issubclass(netrun.InvalidArgumentError, ValueError)
    assert issubclass(netrun.InvalidModelError, ValueError)
    assert issubclass(netrun.OutOfMemoryError, MemoryError)
    assert issubclass(netrun.FileError, OSError)
    for cls in (netrun.InvalidArgumentError, netrun.InvalidModelError, netrun.UnsupportedError,
                netrun.OutOfMemoryError, netrun.BackendError, netrun.FileError, netrun.StateError,
                netrun.InternalError):
        assert issubclass(cls, netrun.Error) and cls.status_name.startswith("NETRUN_ERR_")


def test_model_file_missing(tmp_path):
    with pytest.raises(netrun.FileError) as e:
        netrun.Model(tmp_path / "nope.onnx")
    assert "nope.onnx" in str(e.value) and e.value.status == 6


def test_model_not_onnx(tmp_path):
    p = tmp_path / "notes.onnx"
    p.write_text("this is not a model\n" * 10)
    with pytest.raises(netrun.InvalidModelError) as e:
        netrun.Model(p)
    assert str(e.value)
    with pytest.raises(netrun.InvalidModelError):
        netrun.Model(b"\x08\x07garbage\xff\xff\xff")
    with pytest.raises(netrun.InvalidModelError):
        netrun.Session(b"", backends="cpu")


def test_model_bad_arguments(add_model):
    with pytest.raises(netrun.InvalidArgumentError, match="path or the model's bytes"):
        netrun.Model(42)
    with pytest.raises(netrun.InvalidArgumentError, match="limits"):
        netrun.Model(add_model, max_tensor_bytes=10)


def test_model_limits(add_path):
    with pytest.raises(netrun.Error, match="bytes"):
        netrun.Model(add_path, max_model_bytes=10)


def test_session_bad_options(add_model):
    with pytest.raises(netrun.InvalidArgumentError, match="nosuchbackend"):
        netrun.Session(add_model, backends="nosuchbackend").prepare()
    with pytest.raises(netrun.InvalidArgumentError, match="precision"):
        netrun.Session(add_model, precision="fp8")
    with pytest.raises(netrun.InvalidArgumentError, match="workspace"):
        netrun.Session(add_model, workspace="huge")
    with pytest.raises(netrun.InvalidArgumentError):
        netrun.Session(add_model, threads=-3)


def test_wrong_input_name(add_session):
    with pytest.raises(netrun.InvalidArgumentError, match="no input 'image'"):
        add_session.run({"image": X})
    with pytest.raises(netrun.InvalidArgumentError, match="no input 'extra'"):
        add_session.run({"x": X, "extra": X})
    with pytest.raises(netrun.InvalidArgumentError, match="missing input 'x'"):
        add_session.run({})
    with pytest.raises(netrun.InvalidArgumentError, match="mapping"):
        add_session.run([X])


def test_wrong_output_name(add_session):
    with pytest.raises(netrun.InvalidArgumentError, match="no output 'w'.*outputs: y, z"):
        add_session.run({"x": X}, outputs=["w"])


def test_wrong_dtype(add_session):
    with pytest.raises(netrun.InvalidArgumentError, match="input 'x' takes float32, not float64"):
        add_session.run({"x": X.astype(np.float64)})
    with pytest.raises(netrun.InvalidArgumentError, match="input 'x' takes float32, not int32"):
        add_session.run({"x": X.astype(np.int32)})


def test_wrong_shape(add_session):
    with pytest.raises(netrun.InvalidArgumentError, match="dim 1 must be 16, not 15"):
        add_session.run({"x": np.zeros((1, 15), np.float32)})
    with pytest.raises(netrun.InvalidArgumentError, match="rank 2, not 3"):
        add_session.run({"x": np.zeros((1, 1, 16), np.float32)})
    with pytest.raises(netrun.InvalidArgumentError, match="at most 8"):
        add_session.run({"x": np.zeros((1,) * 9, np.float32)})


def test_object_and_string_arrays(add_session):
    with pytest.raises(netrun.InvalidArgumentError, match="object arrays are not supported"):
        add_session.run({"x": np.array([[object()] * 16])})
    with pytest.raises(netrun.InvalidArgumentError, match="<U1 arrays are not supported"):
        add_session.run({"x": np.array([["a"] * 16])})
    with pytest.raises(netrun.InvalidArgumentError, match="cannot make an array"):
        add_session.run({"x": [[1.0, "x"] * 8]})
    with pytest.raises(netrun.InvalidArgumentError, match="input names are str"):
        add_session.run({1: X})


def test_non_contiguous_is_copied_not_refused(add_session):
    x = np.zeros((16, 2), np.float32)[:, 0].reshape(1, 16)
    y = add_session.run({"x": x[:, ::-1]})["y"]
    np.testing.assert_array_equal(y, np.arange(1, 17, dtype=np.float32).reshape(1, 16))


class DeviceTensor:
    """What a CUDA tensor shows through DLPack (device type 2 = kDLCUDA). A session without a backend of CUDA
    memory refuses it before taking its capsule."""

    def __dlpack__(self, **kw):
        raise AssertionError("must not be read")

    def __dlpack_device__(self):
        return (2, 1)


def test_device_tensor_is_refused_clearly(add_session):
    with pytest.raises(netrun.UnsupportedError, match=r"input 'x': no backend of this session serves CUDA device memory"):
        add_session.run({"x": DeviceTensor()})


def test_closed_session(add_model):
    s = netrun.Session(add_model, backends="cpu")
    s.run({"x": X})
    s.close()
    s.close()  # twice is fine
    for call in (lambda: s.run({"x": X}), s.prepare, lambda: s.placement, lambda: s.stats,
                 lambda: s.set_dim("batch", 1), lambda: s.inputs, lambda: s.value("y")):
        with pytest.raises(netrun.StateError, match="closed"):
            call()
    with netrun.Session(add_model, backends="cpu") as s2:
        pass
    with pytest.raises(netrun.StateError, match="closed"):
        s2.run({"x": X})


def test_closed_model_and_model_outliving_sessions(add_model):
    m = netrun.Model(add_model)
    s = netrun.Session(m, backends="cpu")
    m.close()
    with pytest.raises(netrun.StateError, match="model is closed"):
        netrun.Session(m)
    np.testing.assert_array_equal(s.run({"x": X})["y"], np.arange(1, 17, dtype=np.float32).reshape(1, 16))


def test_state_errors(add_session, batch_model):
    with pytest.raises(netrun.Error, match="batch"):
        netrun.Session(batch_model, backends="cpu").prepare()  # a symbolic dim nobody set
    with pytest.raises(netrun.Error):
        add_session.value("y")  # no run yet
    with pytest.raises(netrun.InvalidArgumentError):
        add_session.set_dim("nosuchdim", 3)


def test_unknown_value_and_bad_tensor_file(add_session, tmp_path):
    add_session.run({"x": X})
    with pytest.raises(netrun.Error, match="nosuch"):
        add_session.value("nosuch")
    with pytest.raises(netrun.Error):
        netrun.read_tensor(b"not a tensor")
    with pytest.raises(netrun.FileError):
        netrun.read_tensor(tmp_path / "missing.npy")


def test_session_survives_errors(add_session):
    for bad in ({"x": X.astype(np.float64)}, {"y": X}, {"x": np.zeros((2, 16), np.float32)}):
        with pytest.raises(netrun.Error):
            add_session.run(bad)
    np.testing.assert_array_equal(add_session.run({"x": X})["y"], np.arange(1, 17, dtype=np.float32).reshape(1, 16))
