"""Large-file transfers straight to and from S3 with presigned URLs: parallel, verified, resumable."""

from .config import TransferConfig
from .download import download_large, download_relay
from .progress import Progress
from .upload import upload_large

__all__ = ["Progress", "TransferConfig", "download_large", "download_relay", "upload_large"]
