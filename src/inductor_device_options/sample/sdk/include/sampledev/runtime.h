/* The sampledev runtime library (libsampledev_runtime.so): what a device SDK
 * ships for the code compiled for its device to link against. */
#ifndef SAMPLEDEV_RUNTIME_H
#define SAMPLEDEV_RUNTIME_H

#ifdef __cplusplus
extern "C" {
#endif

#define SAMPLEDEV_RUNTIME_ABI_VERSION 1

/* The ABI version the library was built with. */
int sampledev_runtime_abi_version(void);

/* Called once by every compiled module as it is loaded; returns how many
 * modules have registered so far in this process. */
int sampledev_runtime_register_module(int abi_version);

/* How many compiled modules have registered in this process. */
int sampledev_runtime_registered_modules(void);

#ifdef __cplusplus
}
#endif

#endif /* SAMPLEDEV_RUNTIME_H */
