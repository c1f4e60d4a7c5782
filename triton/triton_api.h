/*
 * triton_api.h — the part of NVIDIA Triton Inference Server's C API (tritonserver.h, tritonbackend.h) that the
 * netrun backend uses, declared here so that the backend builds without the Triton SDK.
 *
 * Written for TRITONBACKEND API 1.19 (Triton 2.51 / release 24.10). Every declaration below has the signature of
 * that release's headers; enum values are the headers' order. The backend checks at TRITONBACKEND_Initialize that
 * the server reports API major 1 and minor >= 19, and cross-checks the enums against the server's own names
 * (TRITONSERVER_DataTypeString and friends), so a mismatch stops the backend loading instead of misreading data.
 * Functions are resolved from the server process at load time: the backend does not link libtritonserver.
 */
#ifndef NETRUN_TRITON_API_H
#define NETRUN_TRITON_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRITONBACKEND_API_VERSION_MAJOR 1
#define TRITONBACKEND_API_VERSION_MINOR 19

typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;
typedef struct TRITONBACKEND_Backend TRITONBACKEND_Backend;
typedef struct TRITONBACKEND_Model TRITONBACKEND_Model;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;

typedef enum TRITONSERVER_datatype_enum {
    TRITONSERVER_TYPE_INVALID,
    TRITONSERVER_TYPE_BOOL,
    TRITONSERVER_TYPE_UINT8,
    TRITONSERVER_TYPE_UINT16,
    TRITONSERVER_TYPE_UINT32,
    TRITONSERVER_TYPE_UINT64,
    TRITONSERVER_TYPE_INT8,
    TRITONSERVER_TYPE_INT16,
    TRITONSERVER_TYPE_INT32,
    TRITONSERVER_TYPE_INT64,
    TRITONSERVER_TYPE_FP16,
    TRITONSERVER_TYPE_FP32,
    TRITONSERVER_TYPE_FP64,
    TRITONSERVER_TYPE_BYTES,
    TRITONSERVER_TYPE_BF16
} TRITONSERVER_DataType;

typedef enum TRITONSERVER_memorytype_enum {
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_MEMORY_CPU_PINNED,
    TRITONSERVER_MEMORY_GPU
} TRITONSERVER_MemoryType;

typedef enum TRITONSERVER_instancegroupkind_enum {
    TRITONSERVER_INSTANCEGROUPKIND_AUTO,
    TRITONSERVER_INSTANCEGROUPKIND_CPU,
    TRITONSERVER_INSTANCEGROUPKIND_GPU,
    TRITONSERVER_INSTANCEGROUPKIND_MODEL
} TRITONSERVER_InstanceGroupKind;

typedef enum TRITONSERVER_loglevel_enum {
    TRITONSERVER_LOG_INFO,
    TRITONSERVER_LOG_WARN,
    TRITONSERVER_LOG_ERROR,
    TRITONSERVER_LOG_VERBOSE
} TRITONSERVER_LogLevel;

typedef enum TRITONSERVER_errorcode_enum {
    TRITONSERVER_ERROR_UNKNOWN,
    TRITONSERVER_ERROR_INTERNAL,
    TRITONSERVER_ERROR_NOT_FOUND,
    TRITONSERVER_ERROR_INVALID_ARG,
    TRITONSERVER_ERROR_UNAVAILABLE,
    TRITONSERVER_ERROR_UNSUPPORTED,
    TRITONSERVER_ERROR_ALREADY_EXISTS,
    TRITONSERVER_ERROR_CANCELLED
} TRITONSERVER_Error_Code;

typedef enum TRITONBACKEND_artifacttype_enum { TRITONBACKEND_ARTIFACT_FILESYSTEM } TRITONBACKEND_ArtifactType;

/* TRITONSERVER_RequestReleaseFlag and TRITONSERVER_ResponseCompleteFlag */
#define TRITONSERVER_REQUEST_RELEASE_ALL 1u
#define TRITONSERVER_RESPONSE_COMPLETE_FINAL 1u

/* ---- tritonserver.h ---- */
const char *TRITONSERVER_DataTypeString(TRITONSERVER_DataType datatype);
uint32_t TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType datatype);
const char *TRITONSERVER_MemoryTypeString(TRITONSERVER_MemoryType memtype);
const char *TRITONSERVER_InstanceGroupKindString(TRITONSERVER_InstanceGroupKind kind);
TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char *filename, const int line,
                                            const char *msg);
TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error);
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *error);
const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *error);
TRITONSERVER_Error *TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message **message, const char *base,
                                                              size_t byte_size);
TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *message);
TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *message, const char **base,
                                                        size_t *byte_size);

/* ---- tritonbackend.h: what Triton provides ---- */
TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor);
TRITONSERVER_Error *TRITONBACKEND_BackendName(TRITONBACKEND_Backend *backend, const char **name);
TRITONSERVER_Error *TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend *backend, TRITONSERVER_Message **backend_config);

TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *model, const char **name);
TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *model, uint64_t *version);
TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *model, TRITONBACKEND_ArtifactType *artifact_type,
                                                  const char **location);
TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *model, const uint32_t config_version,
                                              TRITONSERVER_Message **model_config);
TRITONSERVER_Error *TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model *model, bool *auto_complete_config);
TRITONSERVER_Error *TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model *model, const uint32_t config_version,
                                                 TRITONSERVER_Message *model_config);
TRITONSERVER_Error *TRITONBACKEND_ModelBackend(TRITONBACKEND_Model *model, TRITONBACKEND_Backend **backend);
TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *model, void **state);
TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *model, void *state);

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *instance, const char **name);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *instance,
                                                    TRITONSERVER_InstanceGroupKind *kind);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *instance, int32_t *device_id);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *instance,
                                                     TRITONBACKEND_Model **model);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *instance, void **state);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *instance, void *state);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *instance,
                                                                TRITONBACKEND_Request *request, const bool success,
                                                                const uint64_t exec_start_ns,
                                                                const uint64_t compute_start_ns,
                                                                const uint64_t compute_end_ns,
                                                                const uint64_t exec_end_ns);
TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *instance,
                                                                     const uint64_t batch_size,
                                                                     const uint64_t exec_start_ns,
                                                                     const uint64_t compute_start_ns,
                                                                     const uint64_t compute_end_ns,
                                                                     const uint64_t exec_end_ns);

TRITONSERVER_Error *TRITONBACKEND_RequestId(TRITONBACKEND_Request *request, const char **id);
TRITONSERVER_Error *TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request *request, uint32_t *count);
TRITONSERVER_Error *TRITONBACKEND_RequestInputName(TRITONBACKEND_Request *request, const uint32_t index,
                                                   const char **input_name);
TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *request, const char *name,
                                               TRITONBACKEND_Input **input);
TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *request, uint32_t *count);
TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *request, const uint32_t index,
                                                    const char **output_name);
TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *request, uint32_t release_flags);

TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *input, const char **name,
                                                  TRITONSERVER_DataType *datatype, const int64_t **shape,
                                                  uint32_t *dims_count, uint64_t *byte_size, uint32_t *buffer_count);
TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *input, const uint32_t index, const void **buffer,
                                              uint64_t *buffer_byte_size, TRITONSERVER_MemoryType *memory_type,
                                              int64_t *memory_type_id);

TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **response, TRITONBACKEND_Request *request);
TRITONSERVER_Error *TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response *response);
TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *response, TRITONBACKEND_Output **output,
                                                 const char *name, const TRITONSERVER_DataType datatype,
                                                 const int64_t *shape, const uint32_t dims_count);
TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *response, const uint32_t send_flags,
                                               TRITONSERVER_Error *error);
TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *output, void **buffer,
                                               const uint64_t buffer_byte_size, TRITONSERVER_MemoryType *memory_type,
                                               int64_t *memory_type_id);

/* ---- tritonbackend.h: what a backend implements (exported by libtriton_netrun.so) ---- */
#define NETRUN_TRITON_EXPORT __attribute__((visibility("default")))
NETRUN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend);
NETRUN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend);
NETRUN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model);
NETRUN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model);
NETRUN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance);
NETRUN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance);
NETRUN_TRITON_EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                                           TRITONBACKEND_Request **requests,
                                                                           const uint32_t request_count);

#endif /* NETRUN_TRITON_API_H */
