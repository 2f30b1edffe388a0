"""Outgoing mail (temporary passwords) through the configured SMTP server, with aiosmtplib."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pluginsdk.errors import ConfigurationError, ProviderError

if TYPE_CHECKING:
    from pluginsdk.config import SmtpSettings

__all__ = ["Mailer"]

log = logging.getLogger("pluginsdk.auth.mail")


class Mailer:
    def __init__(self, config: SmtpSettings) -> None:
        self.config = config

    @property
    def configured(self) -> bool:
        return self.config.configured

    async def send(self, to: str, subject: str, body: str) -> None:
        """Send one plain-text mail; the body (which may hold a password) is never logged."""
        from email.message import EmailMessage  # here: only a mail sent pays for these imports

        import aiosmtplib

        c = self.config
        if not c.configured:
            raise ConfigurationError(
                "No SMTP server is configured (app.authProvider.smtp.host); cannot mail the temporary password.",
                key="app.authProvider.smtp.host",
            )
        msg = EmailMessage()
        msg["From"] = c.sender
        msg["To"] = to
        msg["Subject"] = subject
        msg.set_content(body)
        try:
            await aiosmtplib.send(
                msg,
                hostname=c.host,
                port=c.port,
                username=c.username,
                password=c.password,
                start_tls=c.startTls,
                use_tls=c.useTls,
                timeout=c.timeout,
            )
        except (aiosmtplib.SMTPException, OSError) as exc:
            log.warning("mail to a user failed: %s", type(exc).__name__)
            raise ProviderError(
                "The mail server did not accept the message; nothing was changed. Try again later.",
                details={"provider_code": "SMTP_ERROR"},
            ) from None
