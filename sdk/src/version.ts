/**
 * The SDK's version, as its package.json states it (test/sdk/sdk-package.test.ts compares
 * the two); the Node entry sends it in `user-agent`.
 */
export const SDK_VERSION = "1.0.0";
