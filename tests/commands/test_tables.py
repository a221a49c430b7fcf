"""Long labels broken into lines of the console's width (``commands.tables.label_lines``)."""

from __future__ import annotations

from tunecli.commands.tables import label_lines

NEAREST = ("    nearest: conv2d_NCHWc_winograd.x86(float32[1,64,56,56], float32[64,64,3,3], (1,1), "
           "(1,1,1,1), (1,1), NCHW, NCHW, float32) (package in llvm.log, measured on znver4; tile_m, "
           "tile_p of the fallback)")


def test_a_label_with_a_long_suffix_fits_its_width() -> None:
    """The suffix after the label's closing parenthesis (a config's source) is wrapped as prose:
    no line is wider than asked, every argument is whole, nothing is lost."""
    lines = label_lines(NEAREST, 80, indent="      ")
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0].startswith("    nearest: conv2d_NCHWc_winograd.x86(float32[1,64,56,56],")
    assert all(line.startswith("      ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines) == NEAREST.strip()
    assert "(1,1,1,1)," in " ".join(lines).split()


def test_the_arguments_end_at_the_label_s_own_parenthesis() -> None:
    """Parentheses in the suffix are not the label's: its arguments are those up to the one that
    closes its argument list."""
    text = "  dense.x86(1, 1000, 512, float32): nearest (package in a_log_with_a_rather_long_name.log)"
    lines = label_lines(text, 60)
    assert lines[0] == "  dense.x86(1, 1000, 512, float32): nearest (package in"
    assert lines[1:] == ["    a_log_with_a_rather_long_name.log)"]
