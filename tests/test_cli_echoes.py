"""Tables and answers that say what they assumed: the goodput table says where a kind at rate 0
is counted and what a transceiver unit is, and ``serve`` echoes the request shape it assumed
(a new user's findings S11 and S14)."""

import json

import fabricopt as fo
from fabricopt.cli import main

SERVE = ["serve", "dgx_h100", "--model", "llama3-8b", "--tp", "8", "--batch", "16",
         "--precision", "fp8"]


def test_the_goodput_table_says_where_optics_and_nvlink_are_counted():
    fab = fo.superpod(1)
    job = fo.TrainingJob("llama3-8b", tp=8, global_batch=256, seq_len=4096)
    table = str(fo.training_goodput(fab, job)).splitlines()
    transceiver = next(line for line in table if line.strip().startswith("transceiver"))
    nvlink = next(line for line in table if line.strip().startswith("nvlink"))
    # The shipped rates give 0 for both (Llama 3's Table 5 counts optics with their cables
    # and NVLink faults with the GPUs): the rows say so, so 0 is not read as "never fails".
    # 256 GPUs, one NIC each, one leaf link per NIC and 256 leaf-spine links: 512 links,
    # a transceiver at each end: 1,024 units (a BOM of twin-port modules lists half).
    assert transceiver.split()[1] == "1,024"
    assert transceiver.endswith("counted in cable; units: one per link end (a twin-port "
                                "module serves two)")
    assert nvlink.endswith("counted in gpu")
    # A kind with a rate of its own has no note.
    cable = next(line for line in table if line.strip().startswith("cable"))
    assert "counted" not in cable and "units:" not in cable


def test_serve_echoes_the_request_shape_it_assumed(capsys):
    # No lengths given: the defaults, 2,048 prompt and 256 output tokens, said as such.
    assert main(SERVE) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == ("  request   2,048 prompt + 256 output tokens (every request of the "
                        "batch alike; the defaults; --prompt-len, --output-len set them)")
    # Given lengths and a load: the mean, with how the lengths spread.
    assert main([*SERVE, "--prompt-len", "256", "--output-len", "8", "--rate", "20",
                 "--requests", "200", "--lengths", "exponential"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        "  request   256 prompt + 8 output tokens (mean; exponential lengths)")
    # The capacity search, as JSON: the shape is in the object.
    assert main([*SERVE, "--prompt-len", "256", "--output-len", "8", "--ttft", "0.3",
                 "--tpot", "0.02", "--requests", "200", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["prompt_len"], row["output_len"], row["lengths"]) == (256, 8, "fixed")
