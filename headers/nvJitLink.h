/*
 * nvJitLink.h -- curated cffi cdef subset of the nvJitLink API.
 *
 * Transcribed from the official NVIDIA nvJitLink.h shipped in the
 * nvidia-nvjitlink 13.5.37 wheel (nvidia/cu13/include/nvJitLink.h).  This is a
 * curated subset, not the full header: the result codes, the input types, the
 * link handle and the functions cudaload needs to link one program's LTO IR,
 * and nvJitLinkVersion (from CUDA 12.3; absent before) to name its release.
 * Plain C for cffi's cdef(): no preprocessor lines, no macros, no attributes.
 *
 * The official header's inline wrappers call versioned symbols
 * (__nvJitLinkCreate_13_5, ...); the library also exports every function under
 * its plain name, with the signature below, from CUDA 12.0 onwards (the form
 * the header declares with NVJITLINK_NO_INLINE), and those are what is
 * declared here, so one declaration serves every release.
 * tests/test_headers_layout.py checks every enum
 * constant and prototype against the installed official header.
 */

typedef enum {
    NVJITLINK_SUCCESS                  = 0,
    NVJITLINK_ERROR_UNRECOGNIZED_OPTION = 1,
    NVJITLINK_ERROR_MISSING_ARCH       = 2,
    NVJITLINK_ERROR_INVALID_INPUT      = 3,
    NVJITLINK_ERROR_PTX_COMPILE        = 4,
    NVJITLINK_ERROR_NVVM_COMPILE       = 5,
    NVJITLINK_ERROR_INTERNAL           = 6,
    NVJITLINK_ERROR_THREADPOOL         = 7,
    NVJITLINK_ERROR_UNRECOGNIZED_INPUT = 8,
    NVJITLINK_ERROR_FINALIZE           = 9,
    NVJITLINK_ERROR_NULL_INPUT         = 10,
    NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS = 11,
    NVJITLINK_ERROR_INCORRECT_INPUT_TYPE = 12,
    NVJITLINK_ERROR_ARCH_MISMATCH      = 13,
    NVJITLINK_ERROR_OUTDATED_LIBRARY   = 14,
    NVJITLINK_ERROR_MISSING_FATBIN     = 15,
    NVJITLINK_ERROR_UNRECOGNIZED_ARCH  = 16,
    NVJITLINK_ERROR_UNSUPPORTED_ARCH   = 17,
    NVJITLINK_ERROR_LTO_NOT_ENABLED    = 18
} nvJitLinkResult;

typedef enum {
    NVJITLINK_INPUT_NONE    = 0,
    NVJITLINK_INPUT_CUBIN   = 1,
    NVJITLINK_INPUT_PTX     = 2,
    NVJITLINK_INPUT_LTOIR   = 3,
    NVJITLINK_INPUT_FATBIN  = 4,
    NVJITLINK_INPUT_OBJECT  = 5,
    NVJITLINK_INPUT_LIBRARY = 6,
    NVJITLINK_INPUT_INDEX   = 7,
    NVJITLINK_INPUT_ANY     = 10
} nvJitLinkInputType;

typedef struct nvJitLink *nvJitLinkHandle;

nvJitLinkResult nvJitLinkCreate(nvJitLinkHandle *handle, uint32_t numOptions,
                                const char **options);
nvJitLinkResult nvJitLinkDestroy(nvJitLinkHandle *handle);
nvJitLinkResult nvJitLinkAddData(nvJitLinkHandle handle, nvJitLinkInputType inputType,
                                 const void *data, size_t size, const char *name);
nvJitLinkResult nvJitLinkComplete(nvJitLinkHandle handle);
nvJitLinkResult nvJitLinkGetLinkedCubinSize(nvJitLinkHandle handle, size_t *size);
nvJitLinkResult nvJitLinkGetLinkedCubin(nvJitLinkHandle handle, void *cubin);
nvJitLinkResult nvJitLinkGetLinkedPtxSize(nvJitLinkHandle handle, size_t *size);
nvJitLinkResult nvJitLinkGetLinkedPtx(nvJitLinkHandle handle, char *ptx);
nvJitLinkResult nvJitLinkGetErrorLogSize(nvJitLinkHandle handle, size_t *size);
nvJitLinkResult nvJitLinkGetErrorLog(nvJitLinkHandle handle, char *log);
nvJitLinkResult nvJitLinkGetInfoLogSize(nvJitLinkHandle handle, size_t *size);
nvJitLinkResult nvJitLinkGetInfoLog(nvJitLinkHandle handle, char *log);
nvJitLinkResult nvJitLinkVersion(unsigned int *major, unsigned int *minor);
