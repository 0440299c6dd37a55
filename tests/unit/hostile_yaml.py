"""YAML that attacks its reader, shared by the tests of every file the product reads (model files, the config, the
environment, ``cbt import-cbt``'s SRC)."""

LAUGHS = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))
"""Ten lines of aliases to aliases: 10^10 values once expanded ("billion laughs"). Reading them walked every path."""
