"""Release-before-use in SASS: an mbarrier arrive issued while an ldmatrix's results are unread.

A consumer that reads a shared-memory stage with ldmatrix and then arrives on the stage's `empty`
barrier hands the stage back to the producer. ptxas does not hold the arrive for the ldmatrix's
results: it may schedule the arithmetic that consumes them after the arrive (15th session of issue
28, lab/qkv_qknorm_backward/LOG.md: the probe's `cxr-h2` had `SYNCS.ARRIVE` straight after its 8
`LDSM` and was wrong and not repeatable), so the producer can refill the stage under reads still
queued. An instruction that reads or overwrites an ldmatrix's destination registers waits for
its results (the scoreboard), so an arrive issued after such an instruction is safe.

`hazards()` walks each function's SASS in address order (branches are not followed: a pattern
split across a loop's back edge is not seen) and reports every `SYNCS.ARRIVE*` issued while some
`LDSM`'s destination registers have been neither read nor overwritten since.

    python -m tests.kernels.sass_release LIBRARY_OR_OBJECT [NAME_PART ...]
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_FUNCTION = re.compile(r"Function : (\S+)")
_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
_REGISTER = re.compile(r"(?<![\w.])R(\d+)(?:\.(64|128))?\b")


@dataclass(frozen=True)
class Hazard:
    function: str
    arrive: str  # address of the arrive, hex as cuobjdump prints it
    pending: tuple[str, ...]  # addresses of the LDSMs whose results were still unread


def _tool(name: str) -> str | None:
    """A CUDA binary tool from PATH, else from NVIDIA's wheels (the dev extra installs cuobjdump
    and nvdisasm as nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm)."""
    found = shutil.which(name)
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations if spec else []) or []:
        for candidate in sorted(Path(root).glob(f"cu*/bin/{name}")):
            return str(candidate)
    return None


def cuobjdump() -> str | None:
    return _tool("cuobjdump")


def sass(binary: Path) -> str:
    """`cuobjdump -sass` of a shared library, cubin or object file (cuobjdump runs nvdisasm from PATH)."""
    tool = cuobjdump()
    if tool is None:
        raise FileNotFoundError("cuobjdump not found: `make setup-dev` installs nvidia-cuda-cuobjdump")
    disasm = _tool("nvdisasm")
    if disasm is None:
        raise FileNotFoundError("nvdisasm not found: `make setup-dev` installs nvidia-cuda-nvdisasm")
    path = os.pathsep.join([str(Path(disasm).parent), str(Path(tool).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path}
    out = subprocess.run([tool, "-sass", str(binary)], capture_output=True, text=True, env=env, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass {binary}: {out.stderr.strip()}")
    return out.stdout


def _registers(opcode: str, operands: str) -> set[int]:
    regs: set[int] = set()
    for i, m in enumerate(_REGISTER.finditer(operands)):
        base = int(m.group(1))
        width = {"64": 2, "128": 4}.get(m.group(2) or "", 1)
        if opcode.startswith("HGMMA") and i == 1:
            width = 4  # the A fragment operand names its first of 4 registers
        regs.update(range(base, base + width))
    return regs


def _ldsm_count(opcode: str) -> int:
    last = opcode.rsplit(".", 1)[-1]
    return int(last) if last in ("2", "4") else 1


def hazards(text: str, name_parts: tuple[str, ...] = ()) -> list[Hazard]:
    found: list[Hazard] = []
    function = None
    pending: dict[str, set[int]] = {}  # LDSM address -> its destination registers, unread
    for line in text.splitlines():
        m = _FUNCTION.search(line)
        if m:
            function, pending = m.group(1), {}
            continue
        m = _INSTRUCTION.search(line)
        if not m or function is None or (name_parts and not any(p in function for p in name_parts)):
            continue
        address, opcode, operands = m.groups()
        used = _registers(opcode, operands)
        if opcode.startswith("LDSM"):
            dest_m = _REGISTER.search(operands)
            dest = set(range(int(dest_m.group(1)), int(dest_m.group(1)) + _ldsm_count(opcode))) if dest_m else set()
            address_regs = used - dest
            for key in [k for k, regs in pending.items() if regs & (address_regs | dest)]:
                del pending[key]
            pending[address] = dest
            continue
        for key in [k for k, regs in pending.items() if regs & used]:
            del pending[key]
        if opcode.startswith("SYNCS.ARRIVE") and pending:
            found.append(Hazard(function, address, tuple(sorted(pending))))
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    found = hazards(sass(Path(argv[0])), tuple(argv[1:]))
    for h in found:
        print(f"{h.function}: arrive at /*{h.arrive}*/ with LDSM results unread from {', '.join(h.pending)}")
    print(f"{len(found)} arrive(s) before an ldmatrix's results were used")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
