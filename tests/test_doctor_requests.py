"""An installer's command line names a request, not what is installed: doctor's "checked" facts and judgements must
not take ``pip install torch==1.4.0`` for an installed torch 1.4.0 (issue 25, misreads)."""

from __future__ import annotations

import pytest

from vresolve.doctor.evidence import read_evidence


@pytest.mark.parametrize("line", [
    "$ pip install torch==1.4.0",
    "(python-env) [kinestetika@ghost python-env]$ pip install torch==1.4.0",  # heldout 406's prompt
    "C:\\Users\\me> python -m pip install torch==1.4.0",
    "!pip install torch==1.4.0",
    "pip3 install torch==1.4.0 --index-url https://<index>/whl/cu118",
    "sudo pip install torch==1.4.0",
    "uv pip install torch==1.4.0",
])
def test_an_install_command_is_a_request(line: str) -> None:
    assert read_evidence(line + "\n").dist("torch") is None


@pytest.mark.parametrize(("text", "name", "version"), [
    # corpus 105: the user's own words say which vLLM they built
    ('I tried to build vllm-0.3.3 from source with "pip install -e .". However, I eventually got a error saying,',
     "vllm", "0.3.3"),
    ("torch==2.5.1\n", "torch", "2.5.1"),  # a pip freeze line
    ("$ pip install vllm\nSuccessfully installed vllm-0.6.3 torch-2.4.0\n", "torch", "2.4.0"),  # pip's own report
])
def test_what_was_installed_is_still_read(text: str, name: str, version: str) -> None:
    d = read_evidence(text).dist(name)
    assert d is not None and d.value.version == version
