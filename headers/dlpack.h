/*
 * dlpack.h -- cffi cdef of the DLPack structures cudaload exports.
 *
 * Transcribed from DLPack 1.0 (include/dlpack/dlpack.h of github.com/dmlc/dlpack,
 * DLPACK_MAJOR_VERSION 1, DLPACK_MINOR_VERSION 0); the structures are unchanged in 1.1.
 * Plain C for cffi's cdef(): no preprocessor lines, no macros.  The header's
 * #define constants that cudaload uses are written as enum constants with their values.
 * No library is opened for these: the structures are built in memory and handed to
 * other libraries in a PyCapsule (cudaload/launch/dlpack.py).
 * tests/test_dlpack.py checks the layout against the offsets the specification gives.
 */

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id;
} DLDevice;

typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6
} DLDataTypeCode;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

/* #define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL), DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL);
 * DLPACK_MAJOR_VERSION and DLPACK_MINOR_VERSION of the release transcribed. */
enum {
    DLPACK_FLAG_BITMASK_READ_ONLY = 1,
    DLPACK_FLAG_BITMASK_IS_COPIED = 2,
    DLPACK_MAJOR_VERSION = 1,
    DLPACK_MINOR_VERSION = 0
};

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
