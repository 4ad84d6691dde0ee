"""What reads as a secret (data/secrets.yml through plugin_utils/secret_shapes.py). Expectations hand-written: the
secret forms operators paste (a storage backend's JSON, Redis's password-only URL, a *_CREDS variable) and the
ordinary texts a reviewer found the first version refusing (tokenizer fields, file paths, an /health URL)."""
from __future__ import annotations

import pytest

from ansible_collections.metalserve.sglang.plugins.plugin_utils.secret_shapes import exposed, secret_env_name, secret_kind


@pytest.mark.parametrize("text", [
    '{"secret_access_key": "wJalrXUtnFEMI/K7MDENG"}',
    '{"password": "hunter2hunter2"}',
    '{"auth_token": "abcd1234"}',
    "redis://:hunter2pw@redis.internal:6379",
    "rsync://mirror:RsyncPW@10.0.0.5/models/",
])
def test_secret_forms_are_found(text: str) -> None:
    assert secret_kind(text), text


@pytest.mark.parametrize("text", [
    '{"pad_token": "[PAD]"}', '{"max_new_tokens": "1024"}', '{"credentials_file": "/etc/sglang/s3.json"}',
    '{"password_file": "/etc/sglang/pw"}', '{"thinking_token": "<think>"}', '{"token_pool": "team-a"}',
    '{"hf_token": "<secret: sglang_hf_token>"}', "http://10.0.0.1:30000/health", "HF_TOKEN_PATH=/run/secrets/hf_token",
    "https://example.org/@user/model",
])
def test_ordinary_texts_are_not(text: str) -> None:
    assert secret_kind(text) is None, text


def test_secret_variable_names() -> None:
    assert secret_env_name("MC_STORE_CREDS") and secret_env_name("AWS_SECRET_ACCESS_KEY")
    assert not secret_env_name("NCCL_IB_HCA") and not secret_env_name("SGLANG_MAX_TOKENS")


def test_exposed_skips_private_files_and_names_where() -> None:
    plan = {"files": {"env": {"path": "/etc/sglang/x.env", "mode": "0600", "content": "X=hf_" + "a" * 34},
                      "unit": {"path": "/etc/systemd/system/x.service", "mode": "0644", "content": "ok"}},
            "stages": {"weights": {"settings": {"rsync_source": "rsync://u:pw@h/m/"}}}}
    assert exposed(plan) == ("stages.weights.settings.rsync_source", "a URL with a password (user:password@)",
                             "rsync://u:pw@h/m/")
    del plan["stages"]
    assert exposed(plan) is None
