"""Units and the names of environment variables, kept in one place so functions and infra agree."""

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# Environment variable names set by infra/ and read by functions/.
ENV_BUCKET = "HYCLOUD_BUCKET"
ENV_EFS_ROOT = "HYCLOUD_EFS_ROOT"
ENV_TABLE = "HYCLOUD_TABLE"
ENV_RELAY_STATE_MACHINE = "HYCLOUD_RELAY_STATE_MACHINE_ARN"
ENV_SMALL_FILE_THRESHOLD = "HYCLOUD_SMALL_FILE_THRESHOLD"
ENV_RELAY_CACHE_BYTES = "HYCLOUD_RELAY_CACHE_BYTES"
