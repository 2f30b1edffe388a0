"""The AWS provider driver (aiobotocore is imported only when the first AWS call is made)."""

from .driver import AwsProvider

__all__ = ["AwsProvider"]
