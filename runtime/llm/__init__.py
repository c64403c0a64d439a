"""Model calls: the payloads every runtime shares (`contracts`), and which model serves
(`active`). Import from the submodules: `active` needs the settings, which need the
session contracts, which need `contracts`."""
