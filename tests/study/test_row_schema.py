"""A row saved under another version of the rows' columns is computed again, not reused."""

import importlib

import fabricopt as fo

# The module, not the function of the same name the package exports.
compare_module = importlib.import_module("fabricopt.study.compare")


def test_a_row_of_another_schema_is_not_reused(tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = fo.compare(fo.ring(4), metrics=["summary"], out_dir=out)
    again = fo.compare(fo.ring(4), metrics=["summary"], out_dir=out)
    assert again.reused == 1  # the same schema: the finished row is kept
    monkeypatch.setattr(compare_module, "ROW_SCHEMA", compare_module.ROW_SCHEMA + 1)
    newer = fo.compare(fo.ring(4), metrics=["summary"], out_dir=out)
    assert newer.reused == 0  # another schema: computed again
    assert newer.column("gpus") == first.column("gpus") == [4]


def test_the_report_of_a_batch_saved_before_the_switches_were_counted_apart(tmp_path):
    # Such a batch has one 'switches' column; its report still shows it.
    from fabricopt.plot.report import HEADLINE

    assert ("switches", "switches (network and scale-up chips)") in HEADLINE
