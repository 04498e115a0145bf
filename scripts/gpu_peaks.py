"""The MFU denominator, read from scalebench's one GPU table (src/plan/data/gpus.json, the database `plan` uses and
`run` compiles in): a device name as CUDA reports it ("NVIDIA H200", "NVIDIA H100 80GB HBM3") is matched as
HardwareDatabase::gpu_for_device_name (src/plan/hardware_database.cpp) matches it, and the row's dense peak for the
precision is returned (bf16 and fp16: the tensor-core peak with FP32 accumulation; tf32; fp32). None where no row
matches or the figure is null."""
import json
import os

GPUS_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "plan", "data", "gpus.json")
FIELD = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "tf32": "tf32_tflops", "fp32": "fp32_tflops"}


BRANDS = ("nvidia", "geforce", "tesla")  # words CUDA's names carry and the table's rows and aliases may not


def device_key(device_name):
    """'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3': lower case, the brand words dropped, spaces as dashes."""
    words = device_name.lower().split()
    while words and words[0] in BRANDS:
        words = words[1:]
    return "-".join(words)


def find_row(device_name, rows):
    """The row with the longest alias (or name) equal to the key or a dash-separated prefix of it: 'h100-pcie'
    picks the PCIe row over 'h100', 'h200' matches 'h200' exactly."""
    key, best, best_length = device_key(device_name), None, -1
    for row in rows:
        for alias in [device_key(name) for name in [row["name"]] + row["aliases"]]:
            if (key == alias or key.startswith(alias + "-")) and len(alias) > best_length:
                best, best_length = row, len(alias)
    return best


def peak_tflops(device_name, precision, path=GPUS_JSON):
    with open(path) as f:
        row = find_row(device_name, json.load(f)["gpus"])
    return None if row is None else row.get(FIELD[precision])
