from __future__ import annotations

import json

from django import forms

from console import job_kinds
from console.sealing import secrets_scrub


class ConfigTextarea(forms.Textarea):
    """A config's JSON text with secret fields blanked when shown again (like PasswordInput)."""

    def format_value(self, value):
        text = super().format_value(value)
        return secrets_scrub(text) if text else text


class JobStartForm(forms.Form):
    kind = forms.ChoiceField(choices=())
    config = forms.CharField(widget=ConfigTextarea(attrs={"rows": 6, "spellcheck": "false"}), required=False,
                             help_text="JSON object; leave empty for the kind's defaults.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [(k.name, f"{k.name} — {k.title}") for k in job_kinds.all_kinds()]

    def clean_config(self) -> dict:
        raw = self.cleaned_data["config"].strip()
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"Not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
            ) from None
        if not isinstance(value, dict):
            raise forms.ValidationError("The config must be a JSON object, e.g. {\"seconds\": 5}.")
        return value
