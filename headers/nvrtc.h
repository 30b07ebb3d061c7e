/*
 * nvrtc.h -- curated cffi cdef subset of the NVRTC API.
 *
 * Transcribed from the official NVIDIA nvrtc.h shipped in the
 * nvidia-cuda-nvrtc 13.5.37 wheel (nvidia/cu13/include/nvrtc.h).  This is a
 * curated subset, not the full header: the result codes, the program handle
 * and the functions cudaload needs.  Plain C for cffi's cdef(): no
 * preprocessor lines, no macros, no attributes.
 *
 * NVRTC symbols are not versioned; every function declared here exists with
 * this signature in libnvrtc from CUDA 12.0 onwards.  Result codes above
 * NVRTC_ERROR_PCH_CREATE (15) are only returned by newer NVRTC releases.
 * tests/test_headers_layout.py checks every enum constant against the
 * installed official header.
 */

typedef enum {
    NVRTC_SUCCESS                                     = 0,
    NVRTC_ERROR_OUT_OF_MEMORY                         = 1,
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE              = 2,
    NVRTC_ERROR_INVALID_INPUT                         = 3,
    NVRTC_ERROR_INVALID_PROGRAM                       = 4,
    NVRTC_ERROR_INVALID_OPTION                        = 5,
    NVRTC_ERROR_COMPILATION                           = 6,
    NVRTC_ERROR_BUILTIN_OPERATION_FAILURE             = 7,
    NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION = 8,
    NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION   = 9,
    NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID             = 10,
    NVRTC_ERROR_INTERNAL_ERROR                        = 11,
    NVRTC_ERROR_TIME_FILE_WRITE_FAILED                = 12,
    NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED               = 13,
    NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED             = 14,
    NVRTC_ERROR_PCH_CREATE                            = 15,
    NVRTC_ERROR_CANCELLED                             = 16,
    NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED          = 17,
    NVRTC_ERROR_BUSY                                  = 18
} nvrtcResult;

typedef struct _nvrtcProgram *nvrtcProgram;

/* Error handling and version */
const char *nvrtcGetErrorString(nvrtcResult result);
nvrtcResult nvrtcVersion(int *major, int *minor);
nvrtcResult nvrtcGetNumSupportedArchs(int *numArchs);
nvrtcResult nvrtcGetSupportedArchs(int *supportedArchs);

/* Program lifetime and compilation */
nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int numHeaders, const char * const *headers, const char * const *includeNames);
nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog);
nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char * const *options);

/* Outputs */
nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet);
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx);
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *cubinSizeRet);
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin);
nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t *LTOIRSizeRet);
nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char *LTOIR);
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *logSizeRet);
nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log);

/* Name expressions (C++ lowered names) */
nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char * const name_expression);
nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char *const name_expression, const char **lowered_name);
