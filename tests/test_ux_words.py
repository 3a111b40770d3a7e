"""Words a new user types that were refused: rates with units in generator parameters, token
counts with units, precisions in capitals, a GPU by the head of its catalog key; and the
suggestion made for a misspelt name."""

import pytest

import fabricopt as fo
from fabricopt._checks import did_you_mean, parse_count, parse_gbps, short_name
from fabricopt.cli import main
from fabricopt.errors import InvalidParameterError


@pytest.mark.parametrize("text, gbps", [
    ("400G", 400.0), ("400g", 400.0), ("400Gb", 400.0), ("400Gb/s", 400.0),
    ("400 Gbps", 400.0),
    ("1.6T", 1600.0),                 # 1.6 Tb/s = 1,600 Gb/s
    ("800M", 0.8),                    # 800 Mb/s = 0.8 Gb/s
    ("50GB/s", 400.0),                # bytes per second: 50 x 8 bits
    ("1e12bit/s", 1000.0),            # 1e12 bit/s / 1e9 = 1,000 Gb/s, exactly
    ("400", 400.0),                   # a plain number is Gb/s, as the name says
])
def test_rates_with_units(text, gbps):
    assert parse_gbps("f", "link_gbps", text) == gbps


@pytest.mark.parametrize("text, why", [
    ("50GB", "bytes, not a rate"),    # bytes without /s: an amount, or a small b meant
    ("800m", "a small m is milli"),   # milli or mega
    ("400GiB/s", "link rates are decimal"),
    ("fast", "a rate in Gb/s"),
])
def test_ambiguous_rates_refused_saying_what_is_allowed(text, why):
    with pytest.raises(InvalidParameterError) as exc:
        parse_gbps("f", "link_gbps", text)
    assert why in str(exc.value) and "400Gb/s" in str(exc.value)


def test_a_generator_takes_a_rate_with_a_unit_in_python_and_on_the_command_line(capsys):
    fab = fo.fat_tree(4, link_gbps="400G")
    plain = fo.fat_tree(4, link_gbps=400)
    # the same capacities, arc by arc: the unit was read, not dropped
    assert sorted(d["capacity"] for *_, d in fab.graph.edges(data=True)) == \
        sorted(d["capacity"] for *_, d in plain.graph.edges(data=True))
    assert fo.superpod(1, nic_gbps="400Gb/s").params["nic_gbps"] == 400.0
    assert main(["show", "fat_tree", "k=4", "link_gbps=1.6T"]) == 0
    assert "1600" in capsys.readouterr().out.replace(",", "")  # tech 1600g: 1.6 Tb/s links
    assert main(["show", "fat_tree", "k=4", "link_gbps=50GB"]) == 2
    err = capsys.readouterr().err
    assert "link_gbps" in err and "50Gb/s" in err and "50GB/s" in err


def test_token_counts_take_a_binary_unit_and_refuse_k():
    assert parse_count("f", "seq_len", "8Ki") == 8 * 1024
    assert parse_count("f", "seq_len", "1Mi") == 2**20
    assert parse_count("f", "seq_len", 4096) == 4096
    for text in ("8k", "8K", "1M"):  # 8,000 or 8,192: refused, both named
        with pytest.raises(InvalidParameterError, match="may mean"):
            parse_count("f", "seq_len", text)
    for text in ("8.5", "1e308", "0", "-8"):
        with pytest.raises(InvalidParameterError, match="whole number"):
            parse_count("f", "seq_len", text)


def test_train_reads_seq_len_precision_and_gpu_as_a_user_writes_them(capsys):
    base = ["train", "dgx_h200", "--model", "llama3-8b"]
    assert main(base + ["--seq-len", "8Ki", "--precision", "FP8", "--gpu", "h200"]) == 0
    out = capsys.readouterr().out
    assert "sequence 8192, fp8" in out  # the job's own description of what ran
    with pytest.raises(SystemExit) as exc:  # argparse's own exit for a flag's bad value
        main(base + ["--seq-len", "8k"])
    assert exc.value.code == 2 and "8Ki or 8192" in capsys.readouterr().err
    assert main(base + ["--precision", "fp9"]) == 2
    assert "'bf16', 'fp8', 'fp4'" in capsys.readouterr().err


def test_serve_reads_precision_in_capitals_and_token_units(capsys):
    assert main(["serve", "dgx_h100", "--model", "llama3-8b", "--tp", "8", "--batch", "4",
                 "--prompt-len", "1Ki", "--output-len", "4", "--precision", "FP8"]) == 0
    with pytest.raises(SystemExit) as exc:
        main(["serve", "dgx_h100", "--model", "llama3-8b", "--precision", "FP9"])
    assert exc.value.code == 2
    assert "bf16, fp8, fp4" in capsys.readouterr().err.replace("'", "")


def test_python_jobs_take_the_same_words():
    job = fo.TrainingJob("llama3-8b", precision="FP8", seq_len="8Ki", recompute="Full")
    assert (job.precision, job.seq_len, job.recompute) == ("fp8", 8192, "full")
    assert fo.ServingPlan(precision="FP8", kv_precision="BF16").kv_precision == "bf16"


def test_gpu_by_the_head_of_its_key():
    keys = tuple(fo.Catalog.default().gpus)
    assert "h200_sxm" in keys  # the catalog holds the H200 (dgx_h200 is built of it)
    assert short_name("h200", keys) == "h200_sxm"
    assert short_name("a100", keys) == "a100"  # heads two keys: left to be refused


def test_did_you_mean_prefers_the_real_name():
    # h200 is the head of h200_sxm: that, not b200 (one letter away) is meant
    assert did_you_mean("h200", ["b200", "h200_sxm"]) == " (did you mean 'h200_sxm'?)"
    # without an H200, the GPU that begins as h200 does, among names as close
    assert did_you_mean("h200", ["b200", "h100_sxm"]) == " (did you mean 'h100_sxm'?)"
    # a one-letter typo of a whole name wins over a name the word heads
    assert did_you_mean("microbatch", ["micro_batch", "microbatch_group"]) == \
        " (did you mean 'micro_batch'?)"
    assert did_you_mean("zzz", ["b200"]) == ""
