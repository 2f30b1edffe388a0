"""Fixtures the server tests share with the auth tests."""

from tests.auth.conftest import mailbox  # noqa: F401 -- an SMTP server on loopback that keeps the mail sent
