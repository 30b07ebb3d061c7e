"""The examples of docs/*.md on a GPU: those the recording driver cannot run (memory that holds
what is written, timing, module globals, DLPack into PyTorch), and the recording driver's again,
where their results are real.  The table is tests/test_doc_examples.py's."""

from __future__ import annotations

import pytest

from ..test_doc_examples import GPU_RUNS, run_example


@pytest.mark.parametrize("example", GPU_RUNS, ids=lambda e: e.id)
def test_the_example_runs_as_written_on_the_gpu(example, tmp_path):
    run_example(example, tmp_path)
