/*
 * A stand-in for CUPTI's cupti.h, for KernelTraceTest only: it declares just what scripts/bench/native/kernel_trace.c
 * uses, with the names and signatures of CUPTI's activity API and cuptiGetCallbackName, so that gcc -fsyntax-only
 * can check the tracer on a machine without CUDA. The kernel record types hold only the fields the tracer reads (in
 * the real ones they sit among many others); nothing here is NVIDIA's header, and nothing built against it can run.
 */
#ifndef NCCL4J_MOCK_CUPTI_H
#define NCCL4J_MOCK_CUPTI_H

#include <stddef.h>
#include <stdint.h>

#define CUPTIAPI

typedef struct CUctx_st* CUcontext;

typedef enum {
  CUPTI_SUCCESS = 0,
  CUPTI_ERROR_INVALID_PARAMETER = 1,
  CUPTI_ERROR_MAX_LIMIT_REACHED = 12
} CUptiResult;

typedef enum {
  CUPTI_ACTIVITY_KIND_INVALID = 0,
  CUPTI_ACTIVITY_KIND_MEMCPY = 1,
  CUPTI_ACTIVITY_KIND_MEMSET = 2,
  CUPTI_ACTIVITY_KIND_KERNEL = 3,
  CUPTI_ACTIVITY_KIND_DRIVER = 4,
  CUPTI_ACTIVITY_KIND_RUNTIME = 5,
  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10
} CUpti_ActivityKind;

typedef enum {
  CUPTI_ACTIVITY_FLAG_NONE = 0,
  CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1
} CUpti_ActivityFlag;

typedef struct {
  CUpti_ActivityKind kind;
} CUpti_Activity;

#define NCCL4J_MOCK_KERNEL_RECORD(T) \
  typedef struct { \
    CUpti_ActivityKind kind; \
    uint64_t start; \
    uint64_t end; \
    uint32_t deviceId; \
    uint32_t contextId; \
    uint32_t streamId; \
    uint32_t correlationId; \
    const char* name; \
  } T;
NCCL4J_MOCK_KERNEL_RECORD(CUpti_ActivityKernel9)
NCCL4J_MOCK_KERNEL_RECORD(CUpti_ActivityKernel10)
/* no CUpti_ActivityKernel11: CUDA 13.0's CUPTI, which the GPU machines have, stops at 10 */

typedef enum {
  CUPTI_CB_DOMAIN_INVALID = 0,
  CUPTI_CB_DOMAIN_DRIVER_API = 1,
  CUPTI_CB_DOMAIN_RUNTIME_API = 2
} CUpti_CallbackDomain;

typedef uint32_t CUpti_CallbackId;

/* the record of CUPTI_ACTIVITY_KIND_DRIVER and CUPTI_ACTIVITY_KIND_RUNTIME (all its fields) */
typedef struct {
  CUpti_ActivityKind kind;
  CUpti_CallbackId cbid;
  uint64_t start;
  uint64_t end;
  uint32_t processId;
  uint32_t threadId;
  uint32_t correlationId;
  uint32_t returnValue;
} CUpti_ActivityAPI;

typedef void (CUPTIAPI* CUpti_BuffersCallbackRequestFunc)(uint8_t** buffer, size_t* size, size_t* maxNumRecords);
typedef void (CUPTIAPI* CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId, uint8_t* buffer,
                                                            size_t size, size_t validSize);

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                                    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted);
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes, CUpti_Activity** record);
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t* dropped);
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag);
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name);

#endif
