"""Large-file transfers straight to and from S3 with presigned URLs: parallel, verified, resumable."""

from .download import download_large
from .progress import Progress
from .upload import upload_large

__all__ = ["Progress", "download_large", "upload_large"]
