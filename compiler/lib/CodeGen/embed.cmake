# cmake -DOUT=... -DABI=... -DPRIMITIVES=... -P embed.cmake
# Writes the texts pasted into every generated kernel source as C++ raw strings.
file(READ "${ABI}" abi)
file(READ "${PRIMITIVES}" primitives)
file(WRITE "${OUT}.tmp"
  "// Generated from runtime/kernels/KernelAbi.h and templates/cpu_primitives.h.\n"
  "static const char kKernelAbi[] = R\"MIXK(${abi})MIXK\";\n"
  "static const char kCpuPrimitives[] = R\"MIXK(${primitives})MIXK\";\n")
file(RENAME "${OUT}.tmp" "${OUT}")
