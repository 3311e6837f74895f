"""A software prefetch for numba kernels (LLVM's llvm.prefetch: a hint, never a fault).

A Gibbs sweep reads, for every token, the count list of the token's word: a few hundred bytes
at a random place in a table too large for the core's own caches. The loop that follows is
full of data-dependent branches, so the CPU cannot run ahead to the next token's loads by
itself; asking for the next token's list while the current one is sampled hides that wait.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, arr, index):
    """Hint that ``arr[index]`` will be read soon (index unchecked: a prefetch cannot fault)."""

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0i8"
        )
        # read (0), keep in all cache levels (3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, index), codegen
