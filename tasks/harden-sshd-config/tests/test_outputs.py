from pathlib import Path

WANTED = {"port": "2222", "permitrootlogin": "no", "passwordauthentication": "no",
          "maxauthtries": "3", "allowusers": "deploy admin"}
UNCHANGED = [("include", "/etc/ssh/sshd_config.d/*.conf"), ("loglevel", "VERBOSE"),
             ("pubkeyauthentication", "yes"), ("kbdinteractiveauthentication", "no"),
             ("usepam", "yes"), ("x11forwarding", "yes"), ("printmotd", "no"),
             ("acceptenv", "LANG LC_*"), ("subsystem", "sftp /usr/lib/openssh/sftp-server")]


def directives():
    out = []
    for line in Path("/app/etc/ssh/sshd_config").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, *value = line.split()
            out.append((key.lower(), " ".join(value)))
    return out


def test_hardened_settings_once_each():
    found = directives()
    for key, value in WANTED.items():
        assert [v for k, v in found if k == key] == [value], key


def test_other_directives_unchanged():
    others = [(k, v) for k, v in directives() if k not in WANTED]
    assert others == UNCHANGED
