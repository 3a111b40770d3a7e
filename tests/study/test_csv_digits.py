"""Whole numbers (counts, prices in whole dollars) keep every digit in CSV and Markdown."""

from fabricopt.study.table import _cell


def test_whole_numbers_keep_every_digit():
    # A 24,576-GPU cluster's capex (48,037,210 USD) read 4.80372e+07: ten dollars lost.
    assert _cell(48_037_210.0) == "48037210"
    assert _cell(2.0**30) == "1073741824"
    assert _cell(196.72634) == "196.726"  # other numbers: six significant digits
    assert _cell(1e20) == "1e+20"  # beyond what a float holds exactly: as before
