#!/usr/bin/env python3
"""Checks that a PNG screenshot is not blank: decodes it with zlib alone (8-bit RGB/RGBA/grey, no interlace;
no PIL assumed), then requires more than MIN_COLOURS distinct colours and more than MIN_INK of non-white pixels.
Usage: png_not_blank.py FILE.png; prints "WIDTHxHEIGHT colours=N non_white=F" and exits 1 when blank."""
import struct
import sys
import zlib

MIN_COLOURS = 10
MIN_INK = 0.01  # fraction of pixels that are not pure white


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat, header = 8, bytearray(), None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour_type)
    if depth != 8 or channels is None or interlace != 0:
        sys.exit(f"{path}: unsupported PNG (depth {depth}, colour type {colour_type}, interlace {interlace})")
    raw = zlib.decompress(bytes(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = previous[i], previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = decode(sys.argv[1])
    colours, ink = set(), 0
    for row in rows:
        for x in range(0, len(row), channels):
            pixel = row[x:x + min(channels, 3)]
            colours.add(pixel)
            if pixel != b"\xff" * len(pixel):
                ink += 1
    fraction = ink / float(width * height)
    print(f"{width}x{height} colours={len(colours)} non_white={fraction:.4f}")
    return 0 if len(colours) > MIN_COLOURS and fraction > MIN_INK else 1


if __name__ == "__main__":
    sys.exit(main())
