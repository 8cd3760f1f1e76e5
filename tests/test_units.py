import pytest

from netsim.network.units import format_bytes, format_seconds, parse_bandwidth, parse_bytes, parse_duration, parse_flops, parse_work


@pytest.mark.parametrize(
    ("text", "value"),
    [("64 MiB", 64 * 2**20), ("1 GiB", 2**30), ("1 GB", 10**9), ("1.5 kB", 1500), ("8B", 8), ("2 KiB", 2048), ("1e3 B", 1000)],
)
def test_parse_bytes(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("45 GB/s", 45e9), ("90GB/s", 90e9), ("1 MiB/s", 2**20), ("100 B/s", 100.0), ("400 Gb/s", 50e9), ("400 Gbps", 50e9), ("8 b/s", 1.0), ("100 Mbps", 12.5e6)],
)
def test_parse_bandwidth(text, value):
    assert parse_bandwidth(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("197 TFLOP/s", 1.97e14), ("1.97e14 FLOP/s", 1.97e14), ("918 TFLOPS", 9.18e14), ("4.6 PFLOPs/s", 4.6e15), ("2 GFLOP/s", 2e9), ("5 FLOP/s", 5.0)],
)
def test_parse_flops(text, value):
    assert parse_flops(text) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize(("text", "value"), [("1 us", 1e-6), ("1 µs", 1e-6), ("500 ns", 5e-7), ("2 ms", 2e-3), ("3s", 3.0), ("0 us", 0.0)])
def test_parse_duration(text, value):
    assert parse_duration(text) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_bytes, "64 Mb", "cannot read '64 Mb' as a size; write it like '64 MiB'"),
        (parse_bytes, "0.5 B", "'0.5 B' is not a whole number of bytes"),
        (parse_bytes, 64, "expected a size string such as '64 MiB', got 64"),
        (parse_bandwidth, "45 GBps", "cannot read '45 GBps' as a bandwidth; write it like '45 GB/s'"),
        (parse_bandwidth, "45", "cannot read '45' as a bandwidth; write it like '45 GB/s'"),
        (parse_duration, "1 usec", "cannot read '1 usec' as a duration; write it like '1 us'"),
        (parse_duration, "3 milliseconds", "cannot read '3 milliseconds' as a duration; write it like '3 ms'"),
        (parse_duration, "1 fortnight", "cannot read '1 fortnight' as a duration; write it like '1 us'"),
        (parse_bytes, "1e400 B", "'1e400 B' is more bytes than a number holds; write a finite size such as '64 MiB'"),
        (parse_flops, "197 TFLOPs", "cannot read '197 TFLOPs' as a compute rate; write it like '197 TFLOP/s'"),
        (parse_flops, "1 TiFLOP/s", "cannot read '1 TiFLOP/s' as a compute rate; write it like '197 TFLOP/s'"),
        (parse_flops, 1.97e14, "expected a compute rate string such as '197 TFLOP/s', got 197000000000000.0"),
        (parse_flops, "1e400 FLOP/s", "'1e400 FLOP/s' is not a finite compute rate"),
    ],
)
def test_bad_units_name_the_text(parse, text, message):
    with pytest.raises(ValueError) as error:
        parse(text)
    assert str(error.value) == message


def test_format_round_trips_the_common_sizes():
    assert format_bytes(64 * 2**20) == "64 MiB"
    assert format_bytes(100) == "100 B"
    assert format_seconds(27.3889e-6) == "27.3889 us"
    assert format_seconds(5e-9) == "5 ns"


@pytest.mark.parametrize(
    "parse, text, message",
    [
        (parse_duration, "1e-3", "cannot read '1e-3' as a duration; write it like '1e-3 s'"),  # a bare number of seconds, not '1e-3 us'
        (parse_bandwidth, "45e9", "cannot read '45e9' as a bandwidth; write it like '45e9 B/s'"),  # not '45e9 GB/s'
        (parse_flops, "1 TFLOP", "'1 TFLOP' is an amount of work; a compute rate is per second: write it like '1 TFLOP/s'"),
        (parse_work, "1 TFLOP/s", "'1 TFLOP/s' is a compute rate; an op's flops is its work: write it like '1 TFLOP'"),
    ],
)
def test_suggestions_keep_the_numbers_meaning(parse, text, message):
    with pytest.raises(ValueError) as error:
        parse(text)
    assert str(error.value) == message


def test_an_ops_flops_is_work_and_files_read_yaml_12_floats(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from netsim.cli.main import app

    def program(op: str) -> str:
        data = {"name": "p", "topology": "tpu-v5e:2x2", "mesh": {"X": 4}, "arrays": {"a": {"shape": [4, 4], "dtype": "float32"}}, "data": "none"}
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump(data) + f"ops:\n  - {{name: c, op: compute, in: a, {op}}}\n")
        return str(path)

    runner = CliRunner()
    work, rate = (runner.invoke(app, ["program", program(f"flops: {f}"), "--json"]) for f in ("197 TFLOP", "197 TFLOP/s"))
    assert work.exit_code == 0 and yaml.safe_load(work.output)["ops"][0]["time_s"] == pytest.approx(1.0, rel=1e-12)  # 197 TFLOP at 197 TFLOP/s
    assert rate.exit_code == 2
    assert rate.output == f"error: {tmp_path / 'p.yaml'}: ops.0.flops: '197 TFLOP/s' is a compute rate; an op's flops is its work: write it like '197 TFLOP'\n"
    seconds = runner.invoke(app, ["program", program("seconds: 1.5e-3"), "--json"])  # YAML 1.1 reads 1.5e-3 as text
    assert seconds.exit_code == 0 and yaml.safe_load(seconds.output)["ops"][0]["time_s"] == 1.5e-3
